"""Streams in the distributed mode: a client that hangs up cancels its task, and a stream says at
once that its request was accepted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from cluster_helpers import REDIS_URL, Cluster, cluster_env, slow_answer_reply, sse, task_status

from saber.testing import FakeOpenAIServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture
def cluster(tmp_path: Path, pgvector_url: str, redis_prefix: str) -> Iterator[Cluster]:
    with FakeOpenAIServer([slow_answer_reply] * 500) as llm:
        env = cluster_env(pgvector_url=pgvector_url, redis_url=REDIS_URL, prefix=redis_prefix, llm_url=llm.base_url,
                          witness=tmp_path / "witness.jsonl", cluster_lease=3, graph_checkpoint_lease=3)
        c = Cluster(tmp_path, env)
        try:
            yield c
        finally:
            c.stop()


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
