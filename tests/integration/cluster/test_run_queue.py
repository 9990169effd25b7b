"""The run queue on a real PostgreSQL: fairness, the per-user limit under concurrent claims,
leases that expire, hand-back, cancel and duplicates."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from saber.cluster.queue import DuplicateTask, QueueFull, RunQueue
from saber.db.database import open_database
from saber.runs.request import HistoryTurn, RunRequest

pytestmark = pytest.mark.postgres


@pytest.fixture
def queue(plain_pg_url: str) -> Iterator[RunQueue]:
    db = open_database(plain_pg_url)
    yield RunQueue(db, lease_seconds=30, max_running_per_user=2, max_waiting_per_user=5)
    db.close()


def add(queue: RunQueue, task_id: str, user: str) -> None:
    queue.enqueue(task_id=task_id, user_id=user, kind="chat", request=RunRequest(message=task_id))


def test_users_take_turns_and_the_limit_holds(queue: RunQueue) -> None:
    for i in range(4):
        add(queue, f"a{i}", "alice")
    add(queue, "b0", "bob")
    add(queue, "b1", "bob")
    taken = [c.task_id for c in iter(lambda: queue.claim("w1"), None)]
    # alice first (oldest), then bob (fewer running), then each user's second; no third for alice
    assert taken == ["a0", "b0", "a1", "b1"]
    assert queue.running_by_user() == {"alice": 2, "bob": 2}
    assert queue.depth() == 2
    assert queue.finish("w1", "a0", "done")
    assert queue.claim("w1").task_id == "a2"  # type: ignore[union-attr]


def test_concurrent_claimers_never_exceed_the_limit(queue: RunQueue) -> None:
    queue.max_waiting_per_user = 100
    for i in range(60):  # more than one claim locks at once: claimers hold different rows of one user
        add(queue, f"t{i}", "alice")
    got: list[str] = []
    lock = threading.Lock()

    def claim(worker: str) -> None:
        for _ in range(4):
            c = queue.claim(worker)
            if c is not None:
                with lock:
                    got.append(c.task_id)

    threads = [threading.Thread(target=claim, args=(f"w{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 2 and len(set(got)) == 2


def test_an_expired_lease_is_taken_by_another_worker_not_by_its_own(queue: RunQueue) -> None:
    queue.lease_seconds = 0.2
    add(queue, "t1", "alice")
    first = queue.claim("w1")
    assert first is not None and first.attempts == 1
    time.sleep(0.3)  # let the lease run out (this is what is tested, not a wait for something)
    assert queue.claim("w1") is None, "a worker does not re-take a run it may still be running"
    again = queue.claim("w2")
    assert again is not None and again.task_id == "t1" and again.attempts == 2
    assert queue.renew("w1", ["t1"]) == set(), "the first worker learns it lost the run"
    assert queue.finish("w1", "t1", "done") is False
    assert queue.renew("w2", ["t1"]) == {"t1"}


def test_hand_back_cancel_duplicates_and_the_waiting_cap(queue: RunQueue) -> None:
    add(queue, "t1", "alice")
    c = queue.claim("w1")
    assert c is not None
    with pytest.raises(DuplicateTask, match="already running"):
        add(queue, "t1", "alice")
    assert queue.hand_back("w1", "t1")
    assert queue.get("t1")["status"] == "queued"  # type: ignore[index]
    assert queue.cancel_waiting("t1")
    assert queue.claim("w2") is None
    with pytest.raises(DuplicateTask, match="already exists"):
        add(queue, "t1", "alice")
    queue.enqueue(task_id="t1", user_id="alice", kind="resume", request=RunRequest())  # a finished task may be resumed
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


def test_a_task_id_queued_meanwhile_is_a_duplicate_not_a_database_error(queue: RunQueue, plain_pg_url: str) -> None:
    """Two requests with one task id (of two users: two user locks) both find no row; the second's
    insert waits on the first's, and is refused as a duplicate once the first commits."""
    import psycopg

    outcome: list[BaseException | None] = []
    with psycopg.connect(plain_pg_url) as first, psycopg.connect(plain_pg_url, autocommit=True) as watch:
        first.execute("INSERT INTO saber_run_queue (task_id, user_id, kind, request, status, enqueued_at, attempts, trace) "
                      "VALUES ('same', 'alice', 'chat', '{}', 'queued', 0, 0, '')")

        def second() -> None:
            try:
                queue.enqueue(task_id="same", user_id="bob", kind="chat", request=RunRequest(message="hi"))
                outcome.append(None)
            except BaseException as exc:
                outcome.append(exc)

        thread = threading.Thread(target=second)
        thread.start()
        while not watch.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                "AND datname = current_database()").fetchone()[0]:  # type: ignore[index]
            time.sleep(0.02)
        first.commit()
        thread.join(30)
    assert isinstance(outcome[0], DuplicateTask) and str(outcome[0]) == "task 'same' is already queued", outcome
    assert queue.get("same")["user_id"] == "alice"  # type: ignore[index]


def test_a_finished_run_keeps_its_request_redacted(queue: RunQueue) -> None:
    """Issue 28, item 6: the worker needs the message while the run runs; once it has ended the row
    keeps no secret of it."""
    message = "sign in: my password is hunter2-XYZ"
    queue.enqueue(task_id="s1", user_id="alice", kind="chat", request=RunRequest(message=message, mode="react"))
    claim = queue.claim("w1")
    assert claim is not None and RunRequest.read(claim.request).message == message
    assert queue.finish("w1", "s1", "done")
    row = queue.get("s1")
    assert row is not None and row["status"] == "done"
    assert RunRequest.read(row["request"]) == RunRequest(message="sign in: my [redacted]", mode="react")
    assert not queue.finish("w1", "s1", "done")  # no longer running: nothing changes


def test_a_claim_carries_the_request_as_queued_and_how_long_it_waited(queue: RunQueue) -> None:
    asked = RunRequest(message="hi", selected_tools=["get_time"], history=[HistoryTurn(role="user", content="a")])
    at = queue.enqueue(task_id="t1", user_id="alice", kind="chat", request=asked, trace="00-ab-cd-01")
    assert queue.statuses(["t1", "nope"]) == {"t1": "queued"} and queue.statuses([]) == {}
    claim = queue.claim("w1")
    assert claim is not None and RunRequest.read(claim.request) == asked and claim.kind == "chat"
    assert claim.user_id == "alice" and claim.trace == "00-ab-cd-01" and claim.enqueued_at == at and claim.waited >= 0
    row = queue.get("t1")
    assert row is not None and row["status"] == "running" and row["worker"] == "w1" and row["attempts"] == 1
    assert RunRequest.read(row["request"]) == asked and queue.get("nope") is None
    assert queue.statuses(["t1"]) == {"t1": "running"} and queue.depth() == 0


def test_a_live_lease_is_never_stolen_nor_cancelled_by_another_worker(queue: RunQueue) -> None:
    add(queue, "t1", "alice")
    assert queue.claim("w1") is not None
    assert queue.claim("w2") is None, "a run under a live lease is not taken again"
    assert queue.cancel_waiting("t1") is False, "a run a live worker holds is cancelled through that worker"
    assert queue.finish("w2", "t1", "done") is False and queue.hand_back("w2", "t1") is False
    assert queue.renew("w2", ["t1"]) == set() and queue.renew("w1", []) == set()
    assert queue.get("t1")["status"] == "running"  # type: ignore[index]
    assert queue.finish("w1", "t1", "cancelled") and queue.get("t1")["status"] == "cancelled"  # type: ignore[index]
    assert queue.finish("w1", "t1", "done") is False, "a finished run is finished once"
    assert queue.hand_back("w1", "t1") is False and queue.renew("w1", ["t1"]) == set()


def test_a_run_whose_worker_died_can_be_cancelled_and_frees_its_user_s_slot(queue: RunQueue) -> None:
    queue.lease_seconds = 0.2
    queue.max_running_per_user = 1
    add(queue, "t1", "alice")
    add(queue, "t2", "alice")
    assert queue.claim("w1").task_id == "t1"  # type: ignore[union-attr]
    assert queue.claim("w2") is None, "alice's one slot is taken"
    assert queue.running_by_user() == {"alice": 1}
    time.sleep(0.3)  # the lease running out is what is tested
    assert queue.running_by_user() == {}, "a run under an expired lease holds no slot"
    assert queue.cancel_waiting("t1") and queue.get("t1")["status"] == "cancelled"  # type: ignore[index]
    assert queue.get("t1")["worker"] is None  # type: ignore[index]
    assert queue.claim("w2").task_id == "t2"  # type: ignore[union-attr]


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
    first = queue.claim("w1")
    assert first is not None and first.task_id == "a0" and first.trace == "", "no trace context: none made up"
    assert queue.claim("w1").task_id == "b0", "alice's queued runs wait; bob's goes"  # type: ignore[union-attr]
    assert queue.claim("w1") is None
    row = queue.get("a1")
    assert row is not None and (row["task_id"], row["user_id"], row["kind"], row["status"]) == ("a1", "alice", "chat", "queued")
    assert row["enqueued_at"] > 0 and row["worker"] is None and row["attempts"] == 0


def test_a_run_whose_worker_is_gone_is_recovering_and_a_failed_one_keeps_its_reason(queue: RunQueue) -> None:
    queue.lease_seconds = 0.2
    add(queue, "t1", "alice")
    add(queue, "t2", "alice")
    assert queue.claim("w1") is not None and queue.claim("w1") is not None
    assert queue.statuses(["t1", "t2"]) == {"t1": "running", "t2": "running"}
    time.sleep(0.3)  # the worker stopped renewing its leases (what is tested, not a wait for something)
    assert queue.statuses(["t1"]) == {"t1": "recovering"}, "nobody is on it: not reported running"
    assert queue.get("t1")["status"] == "recovering"  # type: ignore[index]
    assert queue.renew("w1", ["t1", "t2"]) == {"t1", "t2"}, "its worker was only slow: it goes on"
    assert queue.fail("w1", "t2", "malformed run request: history: Input should be a valid list")
    assert queue.records(["t1", "t2"]) == {"t1": ("running", None),
                                           "t2": ("failed", "malformed run request: history: Input should be a valid list")}
    assert queue.claim("w2") is None, "a failed run is not taken again"


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

    @settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(requests)
    def round_trip(request: RunRequest) -> None:
        task_id = f"rt{next(taken)}"
        queue.enqueue(task_id=task_id, user_id=task_id, kind="chat", request=request)
        row = queue.get(task_id)
        assert row is not None and RunRequest.read(row["request"]) == request
        claim = queue.claim("w1")
        assert claim is not None and claim.task_id == task_id and RunRequest.read(claim.request) == request
        assert queue.finish("w1", task_id, "done")

    round_trip()
