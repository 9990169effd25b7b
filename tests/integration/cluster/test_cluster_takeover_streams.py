"""A worker killed mid-answer: another writes the answer again, and the streams say so honestly —
the native one marks the restart on its second ``start``, the OpenAI one sends the text once (or
ends with an error when the answer written again does not continue what it sent)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from cluster_helpers import SLOW_ANSWER, Cluster, numbers, slow_answer_reply, small_cluster, sse, task_status

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

OTHER_ANSWER = "Written again, in other words."
TOKENS_BEFORE_THE_KILL = 3


class Replies:
    """``slow_answer_reply``, except that the query "SLOWGEN other" is answered differently the second time."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.others = 0

    def __call__(self, body: dict[str, Any]) -> Any:
        if "SLOWGEN other" in str(body["messages"][-1].get("content")) and body.get("stream"):
            with self.lock:
                self.others += 1
                if self.others > 1:
                    return OTHER_ANSWER
        return slow_answer_reply(body)


@pytest.fixture
def cluster(tmp_path: Path, pgvector_url: str, redis_prefix: str) -> Iterator[Cluster]:
    with small_cluster(tmp_path, pgvector_url, redis_prefix, Replies()) as c:
        yield c


def test_streams_after_a_worker_died_mid_answer(cluster: Cluster) -> None:
    api = cluster.api()
    worker = cluster.worker(3)
    answering = {name: threading.Event() for name in ("native", "same", "other")}
    native: list[tuple[int, str, dict[str, Any]]] = []
    texts: dict[str, list[str]] = {"same": [], "other": []}
    ids: dict[str, str] = {}
    failures: dict[str, BaseException] = {}

    def read_native() -> None:
        body = {"message": "SLOWGEN native", "mode": "chat", "user_id": "ann", "task_id": "native"}
        try:
            with httpx.stream("POST", api + "/api/chat/stream", json=body, timeout=120) as r:
                for event in sse(r):
                    native.append(event)
                    if [e[1] for e in native].count("token") == TOKENS_BEFORE_THE_KILL:
                        answering["native"].set()
        finally:
            answering["native"].set()

    def read_openai(name: str) -> None:
        with openai.OpenAI(base_url=api + "/v1", api_key="any", max_retries=0, timeout=120) as client:
            stream = client.chat.completions.create(model="saber-chat", stream=True,
                                                    messages=[{"role": "user", "content": f"SLOWGEN {name}"}])
            try:
                for chunk in stream:
                    ids[name] = chunk.id.removeprefix("chatcmpl-")
                    texts[name] += [c.delta.content or "" for c in chunk.choices]
                    if len([t for t in texts[name] if t]) == TOKENS_BEFORE_THE_KILL:
                        answering[name].set()
            except openai.APIError as exc:
                failures[name] = exc
            finally:
                answering[name].set()

    readers = [threading.Thread(target=read_native, daemon=True)] + [
        threading.Thread(target=read_openai, args=(n,), daemon=True) for n in texts]
    for reader in readers:
        reader.start()
    for event in answering.values():
        event.wait()
    assert not failures and all(r.is_alive() for r in readers), f"every answer was still being written: {failures}"
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    cluster.worker(3)
    for reader in readers:
        reader.join(240)

    starts = [e for e in native if e[1] == "start"]
    assert len(starts) == 2 and starts[1][2]["restarted"] is True and starts[1][2]["attempt"] == 2, starts
    after_restart = native[native.index(starts[1]):]
    assert "".join(e[2]["content"] for e in after_restart if e[1] == "token") == SLOW_ANSWER
    assert native[-1][1] == "done" and native[-1][2]["answer"] == SLOW_ANSWER
    assert numbers(native) == list(range(1, len(numbers(native)) + 1))

    assert "same" not in failures and "".join(texts["same"]) == SLOW_ANSWER, "sent once, nothing twice"

    sent = "".join(texts["other"])
    assert isinstance(failures.get("other"), openai.APIError), sent
    assert "does not continue" in str(failures["other"]) and f"GET /api/tasks/{ids['other']}" in str(failures["other"])
    assert sent and SLOW_ANSWER.startswith(sent), "only what the dead attempt had sent"
    assert task_status(api, ids["other"], "local")["answer"] == OTHER_ANSWER
