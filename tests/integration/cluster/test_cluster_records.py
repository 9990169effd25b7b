"""One truth for a run's status, with real processes: a queued request the worker cannot read is
failed once with its reason (never retried), and the API reports what the run record says."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cluster_helpers import Cluster, plan_reply, small_cluster, task_status

from saber.cluster.queue import RunQueue
from saber.db.database import open_database

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture
def cluster(tmp_path: Path, pgvector_url: str, redis_prefix: str) -> Iterator[Cluster]:
    with small_cluster(tmp_path, pgvector_url, redis_prefix, plan_reply) as c:
        yield c


def test_a_malformed_queued_run_is_failed_once_with_its_reason(cluster: Cluster) -> None:
    api = cluster.api()  # migrates the database: the queue's table is there
    db = open_database(cluster.env["SABER_DATABASE_URL"])
    try:
        queue = RunQueue(db, lease_seconds=3, max_running_per_user=4)
        queue.enqueue(task_id="bad", user_id="ann", kind="chat",  # written by an older version, or by hand
                      request={"message": "hi", "history": [{"speaker": "ann", "text": "hello"}]})
        queue.enqueue(task_id="good", user_id="ann", kind="chat", request={"message": "hi", "mode": "chat"})
        assert httpx.get(api + "/api/tasks/bad", params={"user_id": "ann"}).json()["status"] == "queued"
        cluster.worker(2)
        failed = task_status(api, "bad", "ann")
        assert failed["status"] == "failed", failed
        assert failed["error"].startswith("malformed run request: history.0.role: Field required"), failed
        assert task_status(api, "good", "ann")["status"] == "done", "the next run is not held up"
        time.sleep(2 * 3)  # two leases: a run handed back would have been taken again by now
        row = queue.get("bad")
        assert row is not None and row["status"] == "failed" and row["attempts"] == 1, row
        listed = httpx.get(api + "/api/tasks", params={"user_id": "ann"}).json()
        assert {t["task_id"]: t["status"] for t in listed} == {"bad": "failed", "good": "done"}
    finally:
        db.close()


def test_a_run_whose_worker_died_is_recovering_in_the_api_and_the_cli_until_another_takes_it(
        cluster: Cluster, tmp_path: Path) -> None:
    api = cluster.api()
    first = cluster.worker(1)
    body = {"message": "job tr of ann steps 3 slow", "mode": "react", "user_id": "ann", "task_id": "tr", "detach": True}
    with httpx.stream("POST", api + "/api/chat/stream", json=body, timeout=60) as r:
        assert r.status_code == 200
    deadline = time.monotonic() + 60
    while httpx.get(api + "/api/tasks/tr", params={"user_id": "ann"}).json()["status"] != "running":
        assert time.monotonic() < deadline, "the worker never took the run"
        time.sleep(0.2)
    time.sleep(1.0)  # a step is under way
    first.send_signal(signal.SIGKILL)
    first.wait()
    seen: list[str] = []
    deadline = time.monotonic() + 30
    while "recovering" not in seen:  # the lease (3 s) runs out: nobody is on the run, and it says so
        assert time.monotonic() < deadline, seen
        seen.append(httpx.get(api + "/api/tasks/tr", params={"user_id": "ann"}).json()["status"])
        time.sleep(0.2)
    assert set(seen) <= {"running", "recovering"}, seen
    home = tmp_path / "cli-home"
    home.mkdir()
    listed = subprocess.run([sys.executable, "-m", "saber.cli", "tasks", "--all", "--json"], capture_output=True,
                            text=True, timeout=120, env=dict(cluster.env, SABER_HOME=str(home)))
    assert listed.returncode == 0, listed.stderr
    assert [(t["task_id"], t["state"]) for t in json.loads(listed.stdout)] == [("tr", "recovering")], listed.stdout
    cluster.worker(1)
    assert task_status(api, "tr", "ann")["status"] == "done"
