"""One API node and one worker: a react request goes through the queue and streams back."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cluster_helpers import Cluster, free_port, numbers, plan_reply, small_cluster, sse

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture
def cluster(tmp_path: Path, pgvector_url: str, redis_prefix: str) -> Iterator[Cluster]:
    with small_cluster(tmp_path, pgvector_url, redis_prefix, plan_reply) as c:
        yield c


def test_a_request_runs_on_a_worker_and_streams_from_any_node(cluster: Cluster) -> None:
    api_a = cluster.api()
    cluster.worker(2)
    api_b = cluster.api()
    body = {"message": "job t1 of alice steps 2", "mode": "react", "user_id": "alice", "task_id": "t1"}
    with httpx.Client(timeout=60) as client, client.stream("POST", api_a + "/api/chat/stream", json=body) as r:
        assert r.status_code == 200, r.read()
        events = list(sse(r))
    assert numbers(events) == list(range(1, len(numbers(events)) + 1))
    assert events[-1][1] == "done" and events[-1][2]["answer"] == "finished", events
    assert [e[2]["tool"] for e in events if e[1] == "node_start"] == ["witness", "witness"]
    with httpx.Client(timeout=60) as client, client.stream(
            "GET", api_b + "/api/tasks/t1/events", params={"user_id": "alice"}, headers={"Last-Event-ID": "2"}) as r:
        replay = list(sse(r))
    assert replay == events[2:]
    metrics = httpx.get(api_a + "/metrics").text
    assert 'saber_http_requests_total{method="POST",route="/api/chat/stream",status="200"}' in metrics


def test_sigterm_hands_a_run_back_and_another_worker_finishes_it(cluster: Cluster) -> None:
    cluster.env["SABER_CLUSTER_WORKER_GRACE"] = "0.5"
    api = cluster.api()
    first = cluster.worker(1)
    body = {"message": "job ts of bob steps 2 slow", "mode": "react", "user_id": "bob", "task_id": "ts"}
    events: list[tuple[int, str, dict[str, object]]] = []
    with httpx.Client(timeout=120) as client, client.stream("POST", api + "/api/chat/stream", json=body) as r:
        for event in sse(r):
            events.append(event)
            if event[1] == "node_start" and first.poll() is None:
                first.send_signal(signal.SIGTERM)
                assert first.wait(60) == 0
                port = free_port()
                cluster.worker(1, "--metrics-port", str(port))
    assert events[-1][1] == "done" and events[-1][2]["interrupted"] is False, events[-3:]
    assert numbers(events) == list(range(1, len(numbers(events)) + 1))
    assert "0 run(s) finished, 1 handed back" in cluster.output(first)
    metrics = httpx.get(f"http://127.0.0.1:{port}/metrics").text
    for line in ('saber_runs_total{mode="react",outcome="done"} 1.0', "saber_runs_taken_over_total 1.0",
                 'saber_node_duration_seconds_count{status="done",tool="witness"}', "saber_queue_wait_seconds_count 1.0"):
        assert line in metrics, line
