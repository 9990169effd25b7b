"""Streams in the distributed mode: a client that hangs up cancels its task, and a stream says at
once that its request was accepted."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from cluster_helpers import (
    SLOW_ANSWER,
    Cluster,
    numbers,
    slow_answer_reply,
    small_cluster,
    sse,
    sse_lines,
    task_status,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture
def cluster(tmp_path: Path, pgvector_url: str, redis_prefix: str) -> Iterator[Cluster]:
    with small_cluster(tmp_path, pgvector_url, redis_prefix, slow_answer_reply) as c:
        yield c


def test_a_client_that_hangs_up_cancels_its_task(cluster: Cluster) -> None:
    api = cluster.api()
    cluster.worker(2)
    body: dict[str, Any] = {"message": "SLOWGEN hang up", "mode": "chat", "user_id": "ann", "task_id": "gone"}
    with httpx.Client(timeout=60) as client, client.stream("POST", api + "/api/chat/stream", json=body) as r:
        assert r.status_code == 200, r.read()
        assert next(e for e in sse(r) if e[1] == "token"), "the answer is being written"
    with openai.OpenAI(base_url=api + "/v1", api_key="any", max_retries=0) as client:
        stream = client.chat.completions.create(model="saber-chat", stream=True,
                                                messages=[{"role": "user", "content": "SLOWGEN close it"}])
        chunk = next(c for c in stream if c.choices and c.choices[0].delta.content)
        stream.close()
    assert task_status(api, "gone", "ann")["status"] == "cancelled", "the native stream's task ran on"
    closed = task_status(api, chunk.id.removeprefix("chatcmpl-"), "local")
    assert closed["status"] == "cancelled", f"the OpenAI stream's task ran on: {closed}"


def test_a_queued_request_says_so_and_one_task_id_is_taken_once(cluster: Cluster) -> None:
    api = cluster.api()  # no worker yet: requests wait in the queue

    async def five_at_once() -> list[int]:
        async def one(client: httpx.AsyncClient, user: str) -> int:
            body = {"message": "hi", "mode": "chat", "user_id": user, "task_id": "twin", "detach": True}
            async with client.stream("POST", api + "/api/chat/stream", json=body) as r:
                return r.status_code

        async with httpx.AsyncClient(timeout=60) as client:
            return list(await asyncio.gather(*(one(client, f"twin{i}") for i in range(5))))

    assert sorted(asyncio.run(five_at_once())) == [200, 409, 409, 409, 409]

    body = {"message": "SLOWGEN wait for a worker", "mode": "chat", "user_id": "ann", "task_id": "waits"}
    with httpx.Client(timeout=60) as client, client.stream("POST", api + "/api/chat/stream", json=body) as r:
        lines = r.iter_lines()
        head = [next(lines), next(lines)]
        assert head == ["id: 1", "event: start"], f"said at once, before a keep-alive ping: {head}"
        events = sse_lines(itertools.chain(head, lines))
        assert next(events)[2]["task_id"] == "waits"
        assert client.get(api + "/api/tasks/waits", params={"user_id": "ann"}).json()["status"] == "queued"
        listed = client.get(api + "/api/tasks", params={"user_id": "ann"}).json()
        assert [(t["task_id"], t["status"]) for t in listed] == [("waits", "queued")]
        cluster.worker(1)
        rest = list(events)
    assert rest[-1][1] == "done" and rest[-1][2]["answer"] == SLOW_ANSWER, rest[-1]
    assert "start" not in [e[1] for e in rest], "the worker does not start the run a second time"
    assert numbers(rest) == list(range(2, len(numbers(rest)) + 2)), [(e[0], e[1]) for e in rest]
    assert task_status(api, "waits", "ann")["status"] == "done"
