"""The run queue on procrastinate and a real PostgreSQL: fairness, the per-user limit under
concurrent claims, stalled workers whose runs are taken over, hand-back, retry with backoff,
cancel and abort, duplicates and the waiting cap."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import psycopg
import pytest
from cluster_helpers import ADMIN_URL

from saber.cluster.queue import MAX_ATTEMPTS, DuplicateTask, QueueFull, RunQueue, queue_name
from saber.db.database import open_database
from saber.runs.request import HistoryTurn, RunRequest

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def queue_url() -> Iterator[str]:
    """One database for this module's tests, migrated once; each test starts with an empty queue."""
    import uuid

    name = f"saber_queue_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=5) as admin:
        admin.execute(f'CREATE DATABASE "{name}"'.encode())
    url = ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    open_database(url).close()  # migrated here, once
    try:
        yield url
    finally:
        with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())


@pytest.fixture
def queue(queue_url: str) -> Iterator[RunQueue]:
    with psycopg.connect(queue_url, autocommit=True) as conn:
        conn.execute("TRUNCATE saber_runs, procrastinate_events, procrastinate_jobs, procrastinate_workers "
                     "RESTART IDENTITY CASCADE")
    db = open_database(queue_url)
    yield RunQueue(db, lease_seconds=30, max_running_per_user=2, max_waiting_per_user=5)
    db.close()


def add(queue: RunQueue, task_id: str, user: str) -> None:
    queue.enqueue(task_id=task_id, user_id=user, kind="chat", request=RunRequest(message=task_id))


def stall(url: str, worker_id: int) -> None:
    """The worker stopped sending its heartbeat a minute ago (it died): what is tested, without waiting."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE procrastinate_workers SET last_heartbeat = now() - interval '60 seconds' WHERE id = %s",
                     (worker_id,))


def job(url: str, task_id: str) -> tuple[str, str, int, bool, str, str]:
    """(status, queue, attempts, abort_requested, lock, queueing_lock) of the task's procrastinate job."""
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT j.status::text, j.queue_name, j.attempts, j.abort_requested, j.lock, j.queueing_lock "
                           "FROM procrastinate_jobs j JOIN saber_runs r ON r.job_id = j.id WHERE r.task_id = %s",
                           (task_id,)).fetchone()
    assert row is not None
    return row  # type: ignore[return-value]


def test_users_take_turns_and_the_limit_holds(queue: RunQueue) -> None:
    for i in range(4):
        add(queue, f"a{i}", "alice")
    add(queue, "b0", "bob")
    add(queue, "b1", "bob")
    w = queue.register_worker()
    taken = [c.task_id for c in iter(lambda: queue.claim(w, "w1"), None)]
    # alice first (oldest), then bob (fewer running), then each user's second; no third for alice
    assert taken == ["a0", "b0", "a1", "b1"]
    assert queue.running_by_user() == {"alice": 2, "bob": 2}
    assert queue.depth() == 2
    assert queue.finish(w, "a0", "done")
    assert queue.claim(w, "w1").task_id == "a2"  # type: ignore[union-attr]


def test_a_run_is_a_procrastinate_job_in_its_user_s_queue_locked_on_its_task_id(queue: RunQueue, queue_url: str) -> None:
    add(queue, "t1", "alice")
    assert job(queue_url, "t1") == ("todo", queue_name("alice"), 0, False, "t1", "t1")
    with psycopg.connect(queue_url) as conn:  # what procrastinate's own tools show of it
        assert conn.execute("SELECT task_name, args FROM procrastinate_jobs").fetchall() == [("saber.run", {"task_id": "t1"})]
    assert queue_name("alice") != queue_name("bob") and len(queue_name("x" * 500)) <= 128
    w = queue.register_worker()
    assert queue.claim(w, "w1") is not None
    assert job(queue_url, "t1")[0] == "doing"
    assert queue.finish(w, "t1", "done") and job(queue_url, "t1")[0] == "succeeded"
    with pytest.raises(ValueError, match="status: done, cancelled or failed, not 'lost'"):
        queue.finish(w, "t1", "lost")


def test_concurrent_claimers_never_exceed_the_limit(queue: RunQueue) -> None:
    queue.max_waiting_per_user = 100
    for i in range(60):
        add(queue, f"t{i}", "alice")
    got: list[str] = []
    lock = threading.Lock()
    workers = [queue.register_worker() for _ in range(6)]

    def claim(worker: int) -> None:
        for _ in range(4):
            c = queue.claim(worker, str(worker))
            if c is not None:
                with lock:
                    got.append(c.task_id)

    threads = [threading.Thread(target=claim, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert 1 <= len(got) <= 2 and len(set(got)) == len(got), got
    got += [c.task_id for c in iter(lambda: queue.claim(workers[0], "w0"), None)]
    assert len(got) == 2 and len(set(got)) == 2, "the limit, reached and held"


def test_concurrent_requests_with_one_task_id_queue_it_once(queue: RunQueue) -> None:
    outcomes: list[BaseException | None] = []
    lock = threading.Lock()

    def enqueue(user: str) -> None:
        try:
            queue.enqueue(task_id="same", user_id=user, kind="chat", request=RunRequest(message=user))
            result: BaseException | None = None
        except BaseException as exc:
            result = exc
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=enqueue, args=(f"u{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes.count(None) == 1, outcomes
    refused = [o for o in outcomes if o is not None]
    assert all(isinstance(o, DuplicateTask) and str(o) == "task 'same' is already queued" for o in refused), refused
    assert queue.depth() == 1


def test_a_stalled_worker_s_run_is_recovering_then_taken_over_by_another(queue: RunQueue, queue_url: str) -> None:
    add(queue, "t1", "alice")
    w1, w2 = queue.register_worker(), queue.register_worker()
    first = queue.claim(w1, "w1")
    assert first is not None and first.attempts == 1
    assert queue.reap(w2) == [], "a live worker's run is not taken"
    assert queue.claim(w2, "w2") is None
    stall(queue_url, w1)
    assert queue.statuses(["t1"]) == {"t1": "recovering"}, "nobody is on it: not reported running"
    with pytest.raises(DuplicateTask, match=r"^task 't1' is already recovering$"):
        queue.enqueue(task_id="t1", user_id="alice", kind="resume", request=RunRequest())
    assert queue.running_by_user() == {}, "a stalled worker's run holds no slot"
    assert queue.reap(w1) == [], "a worker does not put back its own runs: it is alive, it is asking"
    assert queue.statuses(["t1"]) == {"t1": "running"}, "and its heartbeat went with the asking"
    stall(queue_url, w1)
    assert queue.heartbeat(w1, ["t1"]).held == {"t1"} and queue.statuses(["t1"]) == {"t1": "running"}, "only slow"
    stall(queue_url, w1)
    assert queue.reap(w2) == ["t1"]
    assert queue.statuses(["t1"]) == {"t1": "recovering"}, "put back for another worker: still recovering"
    assert queue.get("t1")["status"] == "recovering"  # type: ignore[index]
    with pytest.raises(DuplicateTask, match=r"^task 't1' is already recovering$"):
        queue.enqueue(task_id="t1", user_id="alice", kind="resume", request=RunRequest())
    again = queue.claim(w2, "w2")
    assert again is not None and again.task_id == "t1" and again.attempts == 2
    assert queue.get("t1")["worker"] == "w2" and queue.statuses(["t1"]) == {"t1": "running"}  # type: ignore[index]
    beat = queue.heartbeat(w1, ["t1"])
    assert beat.held == set() and beat.worker_id != w1, "the first worker learns it lost the run (and registers again)"
    assert queue.finish(w1, "t1", "done") is False and queue.hand_back(w1, "t1") is False
    assert queue.heartbeat(w2, ["t1"]).held == {"t1"}
    assert queue.finish(w2, "t1", "done")


def test_hand_back_cancel_duplicates_and_the_waiting_cap(queue: RunQueue, queue_url: str) -> None:
    add(queue, "t1", "alice")
    w = queue.register_worker()
    assert queue.claim(w, "w1") is not None
    with pytest.raises(DuplicateTask, match="already running"):
        add(queue, "t1", "alice")
    assert queue.hand_back(w, "t1")
    assert queue.get("t1")["status"] == "queued"  # type: ignore[index]
    assert queue.cancel_waiting("t1") and job(queue_url, "t1")[0] == "cancelled"
    assert queue.cancel_waiting("nope") is False
    assert queue.claim(w, "w2") is None
    with pytest.raises(DuplicateTask, match="already exists"):
        add(queue, "t1", "alice")
    queue.enqueue(task_id="t1", user_id="alice", kind="resume", request=RunRequest())  # a finished task may be resumed
    assert queue.get("t1")["status"] == "queued" and queue.get("t1")["attempts"] == 0  # type: ignore[index]
    for i in range(4):
        add(queue, f"x{i}", "alice")
    with pytest.raises(QueueFull, match="5 request"):
        add(queue, "x9", "alice")


def test_the_queue_refuses_sqlite(tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = open_database(tmp_path / "s.db")
    try:
        with pytest.raises(ValueError, match=r"^the run queue needs PostgreSQL \(database_url\): the SQLite default runs requests in-process$"):
            RunQueue(db, lease_seconds=1, max_running_per_user=1)
    finally:
        db.close()


def test_a_finished_run_keeps_its_request_redacted(queue: RunQueue) -> None:
    """Issue 28, item 6: the worker needs the message while the run runs; once it has ended the record
    keeps no secret of it."""
    message = "sign in: my password is hunter2-XYZ"
    queue.enqueue(task_id="s1", user_id="alice", kind="chat", request=RunRequest(message=message, mode="react"))
    w = queue.register_worker()
    claim = queue.claim(w, "w1")
    assert claim is not None and RunRequest.read(claim.request).message == message
    assert queue.finish(w, "s1", "done")
    row = queue.get("s1")
    assert row is not None and row["status"] == "done"
    assert RunRequest.read(row["request"]) == RunRequest(message="sign in: my [redacted]", mode="react")
    assert not queue.finish(w, "s1", "done")  # no longer running: nothing changes


def test_a_claim_carries_the_request_as_queued_and_how_long_it_waited(queue: RunQueue) -> None:
    asked = RunRequest(message="hi", selected_tools=["get_time"], history=[HistoryTurn(role="user", content="a")])
    at = queue.enqueue(task_id="t1", user_id="alice", kind="chat", request=asked, trace="00-ab-cd-01")
    assert queue.statuses(["t1", "nope"]) == {"t1": "queued"} and queue.statuses([]) == {}
    w = queue.register_worker()
    claim = queue.claim(w, "w1")
    assert claim is not None and RunRequest.read(claim.request) == asked and claim.kind == "chat"
    assert claim.user_id == "alice" and claim.trace == "00-ab-cd-01" and claim.enqueued_at == at and claim.waited >= 0
    row = queue.get("t1")
    assert row is not None and row["status"] == "running" and row["worker"] == "w1" and row["attempts"] == 1
    assert RunRequest.read(row["request"]) == asked and queue.get("nope") is None
    assert queue.statuses(["t1"]) == {"t1": "running"} and queue.depth() == 0


def test_a_live_worker_s_run_is_never_taken_and_a_cancel_asks_it_to_abort(queue: RunQueue, queue_url: str) -> None:
    add(queue, "t1", "alice")
    w1, w2 = queue.register_worker(), queue.register_worker()
    assert queue.claim(w1, "w1") is not None
    assert queue.claim(w2, "w2") is None, "a run a live worker holds is not taken again"
    assert queue.finish(w2, "t1", "done") is False and queue.hand_back(w2, "t1") is False
    assert queue.heartbeat(w2, ["t1"]).held == set() and queue.heartbeat(w1, []).held == set()
    assert queue.heartbeat(w1, ["t1"]).abort == set()
    assert queue.cancel_waiting("t1") is False, "a run a live worker holds is cancelled through that worker"
    assert job(queue_url, "t1")[:1] + job(queue_url, "t1")[3:4] == ("doing", True), "asked to abort"
    beat = queue.heartbeat(w1, ["t1"])
    assert beat.held == {"t1"} and beat.abort == {"t1"} and beat.worker_id == w1, "its heartbeat tells the worker"
    assert queue.get("t1")["status"] == "running"  # type: ignore[index]
    assert queue.finish(w1, "t1", "cancelled") and queue.get("t1")["status"] == "cancelled"  # type: ignore[index]
    assert job(queue_url, "t1")[0] == "aborted"
    assert queue.finish(w1, "t1", "done") is False, "a finished run is finished once"
    assert queue.hand_back(w1, "t1") is False and queue.heartbeat(w1, ["t1"]).held == set()


def test_a_run_asked_to_abort_is_cancelled_not_handed_back_nor_taken_over(queue: RunQueue, queue_url: str) -> None:
    add(queue, "t1", "alice")
    add(queue, "t2", "alice")
    w1, w2 = queue.register_worker(), queue.register_worker()
    assert queue.claim(w1, "w1") is not None and queue.claim(w1, "w1") is not None
    assert not queue.cancel_waiting("t1") and not queue.cancel_waiting("t2")
    assert queue.hand_back(w1, "t1") and queue.get("t1")["status"] == "cancelled"  # type: ignore[index]
    stall(queue_url, w1)
    assert queue.reap(w2) == ["t2"] and queue.get("t2")["status"] == "cancelled"  # type: ignore[index]
    assert job(queue_url, "t1")[0] == "aborted" and job(queue_url, "t2")[0] == "aborted"
    assert queue.claim(w2, "w2") is None


def test_a_run_whose_worker_died_can_be_cancelled_and_frees_its_user_s_slot(queue: RunQueue, queue_url: str) -> None:
    queue.max_running_per_user = 1
    add(queue, "t1", "alice")
    add(queue, "t2", "alice")
    w1, w2 = queue.register_worker(), queue.register_worker()
    assert queue.claim(w1, "w1").task_id == "t1"  # type: ignore[union-attr]
    assert queue.claim(w2, "w2") is None, "alice's one slot is taken"
    assert queue.running_by_user() == {"alice": 1}
    stall(queue_url, w1)
    assert queue.running_by_user() == {}, "a run of a stalled worker holds no slot"
    assert queue.cancel_waiting("t1") and queue.get("t1")["status"] == "cancelled"  # type: ignore[index]
    assert queue.get("t1")["worker"] is None and job(queue_url, "t1")[0] == "aborted"  # type: ignore[index]
    assert queue.cancel_waiting("t1") is False
    assert queue.claim(w2, "w2").task_id == "t2"  # type: ignore[union-attr]


def test_a_queued_duplicate_is_named_and_the_cap_counts_only_open_requests(queue: RunQueue) -> None:
    add(queue, "t1", "alice")
    with pytest.raises(DuplicateTask, match="task 't1' is already queued"):
        add(queue, "t1", "alice")
    with pytest.raises(DuplicateTask, match="already queued"):
        queue.enqueue(task_id="t1", user_id="alice", kind="resume", request=RunRequest())
    for i in range(4):
        add(queue, f"x{i}", "alice")
    with pytest.raises(QueueFull, match=r"^user 'alice' already has 5 request\(s\) queued or running$"):
        add(queue, "x9", "alice")
    add(queue, "b1", "bob")  # another user's cap is their own
    assert queue.cancel_waiting("x0") and queue.cancel_waiting("x0") is False
    add(queue, "x9", "alice")  # a cancelled request no longer counts
    assert queue.depth() == 6


def test_a_user_at_the_limit_does_not_hold_up_the_next_user(queue: RunQueue) -> None:
    queue.max_running_per_user = 1
    for task in ("a0", "a1", "a2"):
        add(queue, task, "alice")
    add(queue, "b0", "bob")
    w = queue.register_worker()
    first = queue.claim(w, "w1")
    assert first is not None and first.task_id == "a0" and first.trace == "", "no trace context: none made up"
    assert queue.claim(w, "w1").task_id == "b0", "alice's queued runs wait; bob's goes"  # type: ignore[union-attr]
    assert queue.claim(w, "w1") is None
    row = queue.get("a1")
    assert row is not None and (row["task_id"], row["user_id"], row["kind"], row["status"]) == ("a1", "alice", "chat", "queued")
    assert row["enqueued_at"] > 0 and row["worker"] is None and row["attempts"] == 0


def test_a_failed_run_is_retried_with_backoff_then_failed_with_its_reason(queue: RunQueue, queue_url: str) -> None:
    queue.enqueue(task_id="t1", user_id="alice", kind="chat", request=RunRequest(message="my password is hunter2-XYZ"))
    w = queue.register_worker()
    waits: list[float] = []
    for attempt in range(1, MAX_ATTEMPTS):
        assert queue.claim(w, "w1").attempts == attempt  # type: ignore[union-attr]
        assert queue.retry(w, "t1", "boom") == "retry"
        assert queue.get("t1")["status"] == "queued"  # type: ignore[index]
        assert queue.claim(w, "w1") is None, "not at once: after the backoff"
        with psycopg.connect(queue_url, autocommit=True) as conn:  # the backoff passes (what is tested is its length)
            waits.append(conn.execute("SELECT EXTRACT(EPOCH FROM scheduled_at - now()) FROM procrastinate_jobs "
                                      "WHERE lock = 't1'").fetchone()[0])  # type: ignore[index]
            conn.execute("UPDATE procrastinate_jobs SET scheduled_at = now() WHERE lock = 't1'")
    assert [round(float(s)) for s in waits] == [3, 5, 9, 17], waits
    assert queue.claim(w, "w1").attempts == MAX_ATTEMPTS  # type: ignore[union-attr]
    assert queue.retry(w, "t1", "boom " + "x" * 3000) == "failed"
    assert queue.records(["t1"]) == {"t1": ("failed", ("boom " + "x" * 3000)[:2000])}, "the reason, cut to 2000 characters"
    assert job(queue_url, "t1")[0] == "failed"
    assert RunRequest.read(queue.get("t1")["request"]) == RunRequest(message="my [redacted]"), "no secret kept once it ended"  # type: ignore[index]
    assert queue.retry(w, "t1", "boom") is None and queue.claim(w, "w1") is None


def test_a_worker_pruned_while_stalled_registers_again_and_holds_nothing(queue: RunQueue, queue_url: str) -> None:
    add(queue, "t1", "alice")
    add(queue, "t2", "alice")
    w1, w2 = queue.register_worker(), queue.register_worker()
    assert queue.claim(w1, "w1") is not None and queue.claim(w1, "w1") is not None
    assert queue.heartbeat(w1, ["t1"]).orphans == {"t2"}, "a run it holds but did not name"
    stall(queue_url, w1)
    assert sorted(queue.reap(w2)) == ["t1", "t2"]
    beat = queue.heartbeat(w1, ["t1", "t2"])
    assert beat.worker_id not in (w1, w2) and beat.held == set() and beat.orphans == set()
    with psycopg.connect(queue_url) as conn:
        assert conn.execute("SELECT now() - last_heartbeat < interval '10 seconds' FROM procrastinate_workers "
                            "WHERE id = %s", (beat.worker_id,)).fetchone() == (True,), "registered again, alive"
    queue.unregister_worker(w2)
    assert queue.heartbeat(w2, []).worker_id != w2


def test_a_job_without_its_record_is_failed_not_run(queue: RunQueue, queue_url: str) -> None:
    add(queue, "t1", "alice")
    add(queue, "b1", "bob")
    with psycopg.connect(queue_url, autocommit=True) as conn:
        conn.execute("DELETE FROM saber_runs WHERE task_id = 't1'")
    w = queue.register_worker()
    assert queue.claim(w, "w1").task_id == "b1", "the next user's run is taken instead"  # type: ignore[union-attr]
    with psycopg.connect(queue_url) as conn:
        assert conn.execute("SELECT status::text FROM procrastinate_jobs WHERE lock = 't1'").fetchone() == ("failed",)


def test_a_failed_run_keeps_its_reason_and_is_not_taken_again(queue: RunQueue) -> None:
    add(queue, "t1", "alice")
    add(queue, "t2", "alice")
    w = queue.register_worker()
    assert queue.claim(w, "w1") is not None and queue.claim(w, "w1") is not None
    assert queue.statuses(["t1", "t2"]) == {"t1": "running", "t2": "running"}
    assert queue.fail(w, "t2", "malformed run request: history: Input should be a valid list")
    assert queue.fail(w, "t1", "y" * 2500) and queue.get("t1")["error"] == "y" * 2000  # type: ignore[index]
    assert queue.records(["t2"]) == {"t2": ("failed", "malformed run request: history: Input should be a valid list")}
    assert queue.claim(w, "w2") is None, "a failed run is not taken again"


def test_runs_of_the_old_queue_table_move_onto_procrastinate_when_the_schema_is_upgraded(plain_pg_url: str) -> None:
    """Migration 0008: a queued or leased run of ``saber_run_queue`` becomes a procrastinate job
    (taken next, resumed if it had been taken), a finished one keeps its record; the old rows are
    marked moved so that a worker of the previous version takes none of them."""
    from alembic import command

    from saber.db import migrate
    from saber.db.database import Database

    db = Database(plain_pg_url, pool_size=1)
    try:
        with migrate._connection(db, write=True) as conn:
            command.upgrade(migrate._config(conn), "0007")
        with db.transaction() as tx:
            for task_id, status, attempts, error in (("q1", "queued", 0, None), ("r1", "running", 1, None),
                                                     ("f1", "failed", 2, "malformed run request: x"),
                                                     ("d1", "done", 1, None)):
                tx.execute("INSERT INTO saber_run_queue (task_id, user_id, kind, request, status, enqueued_at, attempts, "
                           "trace, error, lease_until) VALUES (?, 'alice', 'chat', ?, ?, 5, ?, '', ?, 7)",
                           (task_id, '{"message": "hi"}', status, attempts, error))
        assert migrate.upgrade(db) == migrate.head()
        queue = RunQueue(db, lease_seconds=30, max_running_per_user=5)
        assert queue.records(["q1", "r1", "f1", "d1"]) == {"q1": ("queued", None), "r1": ("recovering", None),
                                                           "f1": ("failed", "malformed run request: x"),
                                                           "d1": ("done", None)}
        assert queue.get("d1")["status"] == "done"  # type: ignore[index]
        queue.enqueue(task_id="n1", user_id="alice", kind="chat", request=RunRequest(message="later"))
        with db.transaction() as tx:
            queues = tx.execute("SELECT DISTINCT queue_name FROM procrastinate_jobs").fetchall()
        assert [tuple(q) for q in queues] == [(queue_name("alice"),)], "moved runs are in their user's queue"
        w = queue.register_worker()
        taken = [queue.claim(w, "w1"), queue.claim(w, "w1"), queue.claim(w, "w1")]
        assert [(c.task_id, c.attempts, c.request, c.enqueued_at) for c in taken[:2] if c is not None] == [
            ("q1", 1, {"message": "hi"}, 5.0), ("r1", 2, {"message": "hi"}, 5.0)], "the older runs first"
        assert taken[2] is not None and taken[2].task_id == "n1"
        with db.transaction() as tx:
            left = tx.execute("SELECT task_id, status FROM saber_run_queue ORDER BY task_id").fetchall()
        assert [tuple(r) for r in left] == [("d1", "done"), ("f1", "failed"), ("q1", "moved"), ("r1", "moved")]
        assert migrate.upgrade(db) == migrate.head() and queue.depth() == 0, "upgrading again changes nothing"
    finally:
        db.dispose()


def test_a_cancel_that_meets_a_claim_under_way_waits_for_it_and_leaves_the_run_to_its_worker(
        queue: RunQueue, queue_url: str) -> None:
    """A cancel and a claim of one run at once: the cancel waits for the claim's transaction (it
    locks the run's record), then finds the run running and asks its worker to abort it; it never
    calls a run cancelled that a worker has just taken."""
    add(queue, "t1", "alice")
    w = queue.register_worker()
    outcome: list[bool] = []
    with psycopg.connect(queue_url) as claim, psycopg.connect(queue_url, autocommit=True) as watch:
        claim.execute("UPDATE saber_runs SET attempts = attempts + 1, worker = 'w1' WHERE task_id = 't1'")
        claim.execute("UPDATE procrastinate_jobs SET status = 'doing', worker_id = %s WHERE lock = 't1'", (w,))
        thread = threading.Thread(target=lambda: outcome.append(queue.cancel_waiting("t1")))
        thread.start()
        while not watch.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                "AND datname = current_database()").fetchone()[0]:  # type: ignore[index]
            time.sleep(0.02)
        claim.commit()
        thread.join(30)
    assert outcome == [False]
    assert queue.get("t1")["status"] == "running" and job(queue_url, "t1")[:1] + job(queue_url, "t1")[3:4] == (  # type: ignore[index]
        "doing", True)


def test_a_job_settled_outside_the_queue_reports_how_its_job_ended(queue: RunQueue, queue_url: str) -> None:
    """A job finished by hand (procrastinate's own tools) with its run's record left open."""
    for task_id in ("s", "a", "f", "gone"):
        add(queue, task_id, "alice")
    with psycopg.connect(queue_url, autocommit=True) as conn:
        for task_id, status in (("s", "succeeded"), ("a", "aborted"), ("f", "failed")):
            conn.execute("UPDATE procrastinate_jobs SET status = %s WHERE lock = %s", (status, task_id))
        conn.execute("DELETE FROM procrastinate_jobs WHERE lock = 'gone'")
    assert queue.statuses(["s", "a", "f", "gone"]) == {"s": "done", "a": "cancelled", "f": "failed", "gone": "failed"}


def test_a_stored_request_comes_back_from_postgresql_as_the_same_run_request(queue: RunQueue) -> None:
    """What the API node queues is what the worker reads back, field for field, whatever its text
    (NUL characters, emoji, quotes, long numbers): the queue keeps the request's own JSON."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    texts = st.text(max_size=30)
    requests = st.builds(
        RunRequest, message=texts, mode=st.none() | st.sampled_from(["chat", "tool", "rag", "react"]),
        selected_tools=st.none() | st.lists(texts, max_size=3), use_rag=st.none() | st.booleans(),
        history=st.none() | st.lists(st.builds(HistoryTurn, role=st.sampled_from(["user", "assistant"]), content=texts),
                                     max_size=3),
        after=st.integers(min_value=0, max_value=2**63 - 1))
    taken = iter(range(10**6))
    w = queue.register_worker()

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(requests)
    def round_trip(request: RunRequest) -> None:
        task_id = f"rt{next(taken)}"
        queue.enqueue(task_id=task_id, user_id=task_id, kind="chat", request=request)
        row = queue.get(task_id)
        assert row is not None and RunRequest.read(row["request"]) == request
        claim = queue.claim(w, "w1")
        assert claim is not None and claim.task_id == task_id and RunRequest.read(claim.request) == request
        assert queue.finish(w, task_id, "done")

    round_trip()
