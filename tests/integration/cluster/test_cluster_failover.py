"""The cluster proof: 2 API nodes, 3 workers, 60 react tasks of 4 users sent round-robin and each
streamed from the other node (reconnecting with Last-Event-ID to the first one midway); a worker
is killed with SIGKILL three times mid-run (and replaced). Every task ends with done, every node
whose result was recorded never ran again (the one running at a kill may run twice:
at-least-once), each task's report was saved by write_document exactly once, no stream lost or
repeated an event, the per-user limit held, and a cancel sent to one node stopped a task running
on a worker.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from cluster_helpers import REDIS_URL, Cluster, cluster_env, numbers, plan_reply, sse

from saber.rag import open_store
from saber.testing import FakeOpenAIServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

USERS = ("u1", "u2", "u3", "u4")
TASKS = 60
STEPS = 3
LIMIT = 2

Event = tuple[int, str, dict[str, Any]]


@pytest.fixture
def cluster(tmp_path: Path, pgvector_url: str, redis_prefix: str) -> Iterator[Cluster]:
    with FakeOpenAIServer([plan_reply] * 2000) as llm:
        env = cluster_env(pgvector_url=pgvector_url, redis_url=REDIS_URL, prefix=redis_prefix, llm_url=llm.base_url,
                          witness=tmp_path / "witness.jsonl", cluster_lease=5, graph_checkpoint_lease=5,
                          server_max_running_per_user=LIMIT)
        c = Cluster(tmp_path, env)
        try:
            yield c
        finally:
            c.stop()


def witness_lines(cluster: Cluster) -> list[dict[str, Any]]:
    path = Path(cluster.env["SABER_TEST_WITNESS"])
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def follow(first: str, second: str, task_id: str, user: str) -> list[Event]:
    """Stream the task's events from ``first``, hang up after three, go on from ``second`` with Last-Event-ID."""
    seen: list[Event] = []
    with httpx.Client(timeout=120) as client:
        with client.stream("GET", f"{first}/api/tasks/{task_id}/events", params={"user_id": user}) as r:
            assert r.status_code == 200, r.read()
            for event in sse(r):
                seen.append(event)
                if len(seen) == 3:
                    break
        headers = {"Last-Event-ID": str(seen[-1][0])}
        with client.stream("GET", f"{second}/api/tasks/{task_id}/events", params={"user_id": user},
                           headers=headers) as r:
            assert r.status_code == 200, r.read()
            seen.extend(sse(r))
    return seen


def max_parallel_tasks(lines: list[dict[str, Any]], user: str) -> int:
    """The most tasks of ``user`` with a step executing at the same moment (finished executions)."""
    spans: dict[str, list[float]] = {}
    for line in lines:
        if line["user"] == user:
            spans.setdefault(line["e"], [line["task"], 0.0, 0.0])  # type: ignore[list-item]
            spans[line["e"]][1 if line["at"] == "start" else 2] = line["t"]
    done = [s for s in spans.values() if s[2]]
    return max((len({s[0] for s in done if s[1] <= t < s[2]}) for _, t, _ in done), default=0)


def test_tasks_survive_killed_workers_streams_are_exact_and_limits_hold(cluster: Cluster) -> None:
    apis = [cluster.api(), cluster.api()]
    workers = [cluster.worker(3) for _ in range(3)]
    tasks = [(f"t{i}", USERS[i % len(USERS)]) for i in range(TASKS)]
    for i, (task_id, user) in enumerate(tasks):  # sent round-robin; the request's own connection hangs up at once
        body = {"message": f"please run job {task_id} of {user} steps {STEPS} report", "mode": "react", "user_id": user,
                "task_id": task_id, "detach": True}
        with httpx.stream("POST", apis[i % 2] + "/api/chat/stream", json=body, timeout=30) as r:
            assert r.status_code == 200, r.read()
    with ThreadPoolExecutor(len(tasks)) as pool:
        streams = [pool.submit(follow, apis[(i + 1) % 2], apis[i % 2], task_id, user)
                   for i, (task_id, user) in enumerate(tasks)]
        kills = 0
        for threshold in (TASKS * STEPS // 5, TASKS * STEPS // 2, TASKS * STEPS * 4 // 5):  # kill -9 a busy worker, three times
            while sum(1 for w in witness_lines(cluster) if w["at"] == "end") < threshold:
                time.sleep(0.1)
            busy = Counter(w["pid"] for w in witness_lines(cluster))
            victim = max((w for w in workers if w.poll() is None), key=lambda w: busy[w.pid])
            os.kill(victim.pid, signal.SIGKILL)
            victim.wait()
            kills += 1
            workers.remove(victim)
            workers.append(cluster.worker(3))
        events = {task_id: s.result(timeout=240) for (task_id, _), s in zip(tasks, streams, strict=True)}

    lines = witness_lines(cluster)
    resumed = 0
    for task_id, user in tasks:
        seen = events[task_id]
        assert numbers(seen) == list(range(1, len(numbers(seen)) + 1)), f"{task_id}: lost or repeated events"
        assert seen[-1][1] == "done" and not seen[-1][2]["interrupted"], (task_id, seen[-6:])
        assert seen[-1][2]["answer"] == "finished"
        with httpx.stream("GET", f"{apis[0]}/api/tasks/{task_id}/events", params={"user_id": user}, timeout=30) as r:
            assert list(sse(r)) == seen, f"{task_id}: a replay from the start differs"
        resumed += sum(1 for e in seen if e[1] == "start") > 1
        mine = sorted((line["t"], line["at"], line["step"], line["e"]) for line in lines if line["task"] == task_id)
        detail = httpx.get(f"{apis[1]}/api/tasks/{task_id}", params={"user_id": user}, timeout=30).json()
        statuses = {n["id"]: n["status"] for n in detail["nodes"]}
        assert statuses == {f"n{i}": "done" for i in range(1, STEPS + 2)}, (
            f"{task_id}: every step recorded as done: {detail}; its events: {[(e[1], e[2]) for e in seen if e[1] != 'token']}")
        recorded = {n["id"]: str(n["result"]).rsplit(" ", 1)[-1] for n in detail["nodes"] if n["tool"] == "witness"}
        for step, execution in recorded.items():
            finished = [t for t, at, s, e in mine if e == execution and at == "end"]
            assert finished, f"{task_id}: the execution the checkpoint recorded for {step} really ran to its end"
            again = [t for t, at, s, _ in mine if s == step and at == "start" and t > finished[0]]
            assert not again, f"{task_id}: step {step} ran again after its result was recorded"
    assert kills == 3 and resumed >= 1, "a kill should have interrupted at least one task"
    reports = Counter(d.title for d in open_store(cluster.env["SABER_DATABASE_URL"]).list_documents())
    assert reports == {f"report {task_id}": 1 for task_id, _ in tasks}, "each report saved once, none lost"
    for user in USERS:
        assert max_parallel_tasks(lines, user) == LIMIT, f"{user}: the per-user limit of {LIMIT} did not hold (or was never reached)"


def test_a_cancel_sent_to_one_node_stops_the_task_on_its_worker(cluster: Cluster) -> None:
    api_a, api_b = cluster.api(), cluster.api()
    cluster.worker(2)
    body = {"message": "job tc of u5 steps 3 slow", "mode": "react", "user_id": "u5", "task_id": "tc", "detach": True}
    seen: list[Event] = []
    started = threading.Event()

    def read() -> None:
        with httpx.stream("POST", api_a + "/api/chat/stream", json=body, timeout=60) as r:
            for event in sse(r):
                seen.append(event)
                if event[1] == "node_start":
                    started.set()

    reader = threading.Thread(target=read)
    reader.start()
    assert started.wait(60), seen
    r = httpx.post(api_b + "/api/tasks/tc/cancel", params={"user_id": "u5"}, timeout=30)
    assert r.status_code == 200 and r.json()["cancelled"] is True, r.text
    reader.join(30)
    assert seen[-1][1] == "done" and seen[-1][2]["interrupted"] is True, seen[-1]
    steps = [(line["step"], line["at"]) for line in witness_lines(cluster)]
    assert steps == [("n1", "start")], "the running step was cut short and no later step started"

    # resumed from the other node: it goes on from its checkpoint
    with httpx.stream("POST", api_b + "/api/tasks/tc/resume", params={"user_id": "u5"}, timeout=60) as r:
        assert r.status_code == 200, r.read()
        resumed = list(sse(r))
    assert numbers(resumed) == list(range(seen[-1][0] + 1, seen[-1][0] + 1 + len(numbers(resumed)))), "numbered on"
    assert resumed[0][1] == "start" and resumed[-1][1] == "done" and resumed[-1][2]["interrupted"] is False
    assert [e[2]["tool"] for e in resumed if e[1] == "node_start"] == ["witness"] * 3, [(e[1], str(e[2])[:150]) for e in resumed]
    r = httpx.post(api_a + "/api/tasks/tc/resume", params={"user_id": "u5"}, timeout=30)
    assert r.status_code == 409 and "already finished" in r.text, r.text
