"""One truth for a run's status, with real processes: a queued request the worker cannot read is
failed once with its reason (never retried); the API, ``saber tasks`` and the queue row the
workers settle say the same of a run; a body the worker could not run is refused at the API node."""

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
from cluster_helpers import Cluster, plan_reply, small_cluster, sse, task_status

from saber.cluster.queue import RunQueue
from saber.db.database import open_database
from saber.runs.request import RunRequest

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
        queue.enqueue(task_id="bad", user_id="ann", kind="chat", request=RunRequest(message="hi"))
        with db.transaction() as tx:  # its stored request as an older version, or a hand, wrote it
            tx.execute("UPDATE saber_runs SET request = ? WHERE task_id = 'bad'",
                       (json.dumps({"message": "hi", "history": [{"speaker": "ann", "text": "hello"}]}),))
        queue.enqueue(task_id="good", user_id="ann", kind="chat", request=RunRequest(message="hi", mode="chat"))
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


def test_a_bad_body_is_refused_at_the_api_node_naming_the_field_and_nothing_is_queued(cluster: Cluster) -> None:
    api = cluster.api()
    db = open_database(cluster.env["SABER_DATABASE_URL"])
    try:
        queue = RunQueue(db, lease_seconds=3, max_running_per_user=4)
        bodies = [({"mode": "fast"}, "mode: Input should be 'chat', 'tool', 'rag' or 'react'"),
                  ({"after": 3}, "after: Extra inputs are not permitted"),  # a queued run's own field
                  ({"history": [{"role": "user", "content": "hi"}]}, "history: Extra inputs are not permitted"),
                  ({"use_rag": "maybe"}, "use_rag: Input should be a valid boolean"),
                  ({"selected_tools": ["no_such_tool"]}, "selected_tools"),
                  ({"message": "   "}, "message: must not be blank")]
        for i, (fields, named) in enumerate(bodies):
            body = {"message": "hi", "user_id": "ann", "task_id": f"bad{i}", **fields}
            r = httpx.post(api + "/api/chat/stream", json=body, timeout=60)
            assert r.status_code == 422 and named in r.json()["error"]["message"], (fields, r.text)
            assert queue.get(f"bad{i}") is None, f"{fields}: queued though refused"
        assert queue.depth() == 0
    finally:
        db.close()


def _statuses(api: str, env: dict[str, str], queue: RunQueue, task_id: str, home: Path) -> dict[str, str | None]:
    """The task's status as each reader says it: the API's detail and list, ``saber tasks``, and the
    queue row the workers settle."""
    detail = httpx.get(f"{api}/api/tasks/{task_id}", params={"user_id": "ann"}, timeout=30).json()["status"]
    listed = {t["task_id"]: t["status"] for t in httpx.get(api + "/api/tasks", params={"user_id": "ann"}, timeout=30).json()}
    cli = subprocess.run([sys.executable, "-m", "saber.cli", "tasks", "--all", "--json"], capture_output=True, text=True,
                         timeout=120, env=dict(env, SABER_HOME=str(home)))
    assert cli.returncode == 0, cli.stderr
    return {"api": detail, "api list": listed.get(task_id),
            "cli": {t["task_id"]: t["state"] for t in json.loads(cli.stdout)}.get(task_id),
            "queue": queue.statuses([task_id]).get(task_id)}


def _settled(queue: RunQueue, task_id: str) -> None:
    """Wait for the worker to settle the run in the queue (it does so after writing its end)."""
    deadline = time.monotonic() + 60
    while queue.statuses([task_id]).get(task_id) in ("queued", "running"):
        assert time.monotonic() < deadline, queue.get(task_id)
        time.sleep(0.2)


def test_a_run_reports_one_status_through_the_api_the_cli_and_the_queue(cluster: Cluster, tmp_path: Path) -> None:
    api = cluster.api()
    cluster.worker(2)
    home = tmp_path / "cli-home"
    home.mkdir()
    db = open_database(cluster.env["SABER_DATABASE_URL"])
    try:
        queue = RunQueue(db, lease_seconds=3, max_running_per_user=4)
        body = {"message": "job sr of ann steps 20 slow", "mode": "react", "user_id": "ann", "task_id": "sr", "detach": True}
        with httpx.stream("POST", api + "/api/chat/stream", json=body, timeout=60) as r:
            assert r.status_code == 200
            assert next(e for e in sse(r) if e[1] == "node_start"), "a step is under way: its checkpoint is written"
        seen = _statuses(api, cluster.env, queue, "sr", home)
        assert set(seen.values()) == {"running"}, seen
        assert httpx.post(api + "/api/tasks/sr/cancel", params={"user_id": "ann"}, timeout=60).json()["cancelled"]
        _settled(queue, "sr")
        seen = _statuses(api, cluster.env, queue, "sr", home)
        assert set(seen.values()) == {"cancelled"}, seen

        done = httpx.post(api + "/api/chat", json={**body, "message": "job sd of ann steps 1", "task_id": "sd"}, timeout=120)
        assert done.status_code == 200 and not done.json()["interrupted"], done.text
        _settled(queue, "sd")
        seen = _statuses(api, cluster.env, queue, "sd", home)
        assert set(seen.values()) == {"done"}, seen

        failed = httpx.post(api + "/api/chat", json={**body, "message": "job sf of ann steps 1 broken", "task_id": "sf"},
                            timeout=120)
        assert failed.status_code == 200, failed.text
        _settled(queue, "sf")
        seen = _statuses(api, cluster.env, queue, "sf", home)
        assert set(seen.values()) == {"failed"}, seen  # a step failed: the queue's record says so too
        record = queue.get("sf")
        assert record is not None and "nb (broken_step)" in str(record["error"]) and "broken on purpose" in str(record["error"])
    finally:
        db.close()
