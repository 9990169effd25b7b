"""The approval broker and its store on a real database: a question is asked once and answered
once, an answer reaches the waiting step whichever process gives it, silence denies, and an
approval for the task covers that tool only, in that task only."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from saber.approvals import ApprovalBroker, ApprovalStore
from saber.approvals.store import Question
from saber.db import open_database
from saber.events import ApprovalGiven, ApprovalRequired, Event
from saber.graph.approval import Decision
from saber.tools import Tool


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each database a deployment may use (a cluster's is PostgreSQL)."""
    return str(tmp_path / "saber.db") if request.param == "sqlite" else str(request.getfixturevalue("pgvector_url"))


@pytest.fixture
def store(target: str) -> Iterator[ApprovalStore]:
    db = open_database(target)
    yield ApprovalStore(db)
    db.close()


def ask(store: ApprovalStore, node: str = "n1", *, task: str = "t1", user: str = "alice", tool: str = "rm") -> str:
    return store.ask(task_id=task, node_id=node, user_id=user, tool=tool, params={"path": "/tmp/x"}, reason="writes").status


def test_a_question_is_asked_once_and_answered_once(store: ApprovalStore) -> None:
    assert ask(store) == "pending"
    again = store.ask(task_id="t1", node_id="n1", user_id="alice", tool="rm", params={"path": "/other"}, reason="r2")
    assert again.params == {"path": "/tmp/x"} and again.reason == "writes", "asking again finds the first question"
    answered = store.decide("t1", "n1", approve=True, by="bob", reason="fine")
    assert answered is not None and answered.status == "approved" and answered.decided_by == "bob"
    assert answered.decision_reason == "fine" and answered.user_id == "alice" and answered.created_at > 0
    assert store.decide("t1", "n1", approve=False, by="mallory") is None, "an answer is not overwritten"
    assert store.get("t1", "n1").status == "approved"  # type: ignore[union-attr]
    assert store.ask(task_id="t1", node_id="n1", user_id="alice", tool="rm", params={}, reason="").status == "approved"
    assert store.decide("t1", "n9", approve=True, by="bob") is None and store.get("t1", "n9") is None


def test_a_new_question_comes_back_as_asked_and_an_answer_without_a_reason_has_none(store: ApprovalStore) -> None:
    asked = store.ask(task_id="t1", node_id="n1", user_id="alice", tool="rm", params={"path": "/tmp/x"}, reason="writes")
    assert (asked.user_id, asked.tool, asked.reason, asked.status) == ("alice", "rm", "writes", "pending")
    assert asked == store.get("t1", "n1"), "what ask returns is what is stored"
    answered = store.decide("t1", "n1", approve=True, by="bob")
    assert answered is not None and answered.decision_reason == ""


def test_questions_asked_at_once_from_many_threads_are_one_question(tmp_path: Path) -> None:
    """Each ask reads, then writes: on SQLite it takes the write lock first, or a thread whose read
    was overtaken by another's insert fails ("database is locked") instead of finding that question."""
    from concurrent.futures import ThreadPoolExecutor

    db = open_database(tmp_path / "saber.db", pool_size=8)
    try:
        store = ApprovalStore(db)
        for node in (f"n{i}" for i in range(5)):
            def ask_as(i: int, node: str = node) -> Question:
                return store.ask(task_id="t", node_id=node, user_id=f"u{i}", tool="rm", params={"i": i}, reason=f"r{i}")

            with ThreadPoolExecutor(8) as pool:
                asked = list(pool.map(ask_as, range(8)))
            assert len({(q.user_id, q.reason) for q in asked}) == 1, "every thread got the one question"
            assert [q.status for q in asked] == ["pending"] * 8
    finally:
        db.close()


def test_a_denial_is_recorded_as_denied(store: ApprovalStore) -> None:
    ask(store)
    denied = store.decide("t1", "n1", approve=False, by="bob", reason="no")
    assert denied is not None and denied.status == "denied" and denied.to_dict()["decision_reason"] == "no"
    assert set(denied.to_dict()) == {"task_id", "node_id", "tool", "params", "reason", "status", "decided_by",
                                     "decision_reason", "created_at"}


def test_pending_questions_are_listed_per_task_and_per_user_oldest_first(store: ApprovalStore) -> None:
    ask(store, "n1")
    ask(store, "n2", user="bob")
    ask(store, "n1", task="t2")
    ask(store, "n3")
    store.decide("t1", "n3", approve=True, by="alice")
    store.approve_tool_for_task("t1", "rm", user_id="alice", by="alice")
    assert [(q.task_id, q.node_id) for q in store.pending()] == [("t1", "n1"), ("t1", "n2"), ("t2", "n1")]
    assert [q.node_id for q in store.pending(task_id="t1")] == ["n1", "n2"]
    assert [(q.task_id, q.node_id) for q in store.pending(user_id="alice")] == [("t1", "n1"), ("t2", "n1")]
    assert [q.node_id for q in store.pending(task_id="t1", user_id="bob")] == ["n2"]


def test_an_approval_for_the_task_covers_that_tool_in_that_task_only(store: ApprovalStore) -> None:
    assert not store.approved_for_task("t1", "rm")
    store.approve_tool_for_task("t1", "rm", user_id="alice", by="alice")
    store.approve_tool_for_task("t1", "rm", user_id="alice", by="alice")  # twice is once
    assert store.approved_for_task("t1", "rm")
    assert not store.approved_for_task("t1", "shell") and not store.approved_for_task("t2", "rm")


def test_params_that_json_cannot_write_are_kept_as_text(store: ApprovalStore) -> None:
    when = datetime(2026, 1, 2, tzinfo=UTC)
    store.ask(task_id="t1", node_id="n1", user_id="u", tool="rm", params={"at": when, "名": "值"}, reason="")
    assert store.get("t1", "n1").params == {"at": when.isoformat(), "名": "值"}  # type: ignore[union-attr]


def rm_tool(**kwargs: Any) -> Tool:
    return replace(Tool.from_json_schema("rm", "remove", {"type": "object", "properties": {}}, lambda a: "ok"), **kwargs)


def test_the_reason_to_ask_is_the_tool_s_own_then_the_configured_list(store: ApprovalStore) -> None:
    broker = ApprovalBroker(store, always_ask=frozenset({"rm"}))
    assert broker.reason_for(rm_tool(), {}) == "rm is set to ask before it runs (approval.tools)"
    assert broker.reason_for(rm_tool(requires_approval=True), {}) == "rm requires approval"
    assert broker.reason_for(rm_tool(requires_approval=lambda a: f"deletes {a['p']}"), {"p": "/"}) == "deletes /"
    assert ApprovalBroker(store).reason_for(rm_tool(), {}) is None


class Step:
    """A step asking the broker, and the events it emits; ``asked`` is set once it waits for a person."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.asked = asyncio.Event()

    async def emit(self, event: Event) -> None:
        self.events.append(event)
        if isinstance(event, ApprovalRequired):
            self.asked.set()

    async def ask(self, broker: ApprovalBroker, node: str = "n1") -> Decision:
        return await broker.for_user("alice").request(task_id="t1", node_id=node, tool="rm", params={"path": "/x"},
                                                      reason="deletes", emit=self.emit)

    async def waiting(self, broker: ApprovalBroker) -> asyncio.Task[Decision]:
        task = asyncio.create_task(self.ask(broker))
        await asyncio.wait_for(self.asked.wait(), 10)
        return task


async def test_an_answer_in_this_process_wakes_the_step_with_who_gave_it(store: ApprovalStore) -> None:
    broker = ApprovalBroker(store, timeout=60, poll=30)
    step = Step()
    waiting = await step.waiting(broker)
    events = step.events
    assert isinstance(events[0], ApprovalRequired) and events[0].params == {"path": "/x"} and events[0].reason == "deletes"
    assert [q.user_id for q in await broker.pending(task_id="t1")] == ["alice"]
    answered = await broker.decide("t1", "n1", approve=True, by="bob", reason="ok")
    decision = await asyncio.wait_for(waiting, 10)  # poll is 30 s: only the wake-up can answer this fast
    assert answered is not None and decision.approved and decision.by == "bob" and decision.reason == "ok"
    given = events[-1]
    assert isinstance(given, ApprovalGiven) and given.approved and given.by == "bob" and given.node_id == "n1"
    assert (await broker.question("t1", "n1")).status == "approved"  # type: ignore[union-attr]
    assert await broker.decide("t1", "n1", approve=False, by="x") is None


async def test_an_answer_from_another_process_is_seen_by_polling(store: ApprovalStore, target: str) -> None:
    broker = ApprovalBroker(store, timeout=60, poll=0.05)
    other_db = open_database(target)
    try:
        other = ApprovalBroker(ApprovalStore(other_db))
        waiting = await Step().waiting(broker)
        await other.decide("t1", "n1", approve=False, by="carol", reason="not today")
        decision = await asyncio.wait_for(waiting, 10)
        assert not decision.approved and decision.by == "carol" and decision.reason == "not today"
    finally:
        other_db.close()


async def test_no_answer_in_time_denies_and_says_so(store: ApprovalStore) -> None:
    broker = ApprovalBroker(store, timeout=0.2, poll=0.05)
    step = Step()
    decision = await asyncio.wait_for(step.ask(broker), 10)
    events = step.events
    assert not decision.approved and decision.by == "timeout" and decision.reason == "no answer within 0.2 s"
    assert store.get("t1", "n1").status == "denied"  # type: ignore[union-attr]
    assert isinstance(events[-1], ApprovalGiven) and events[-1].by == "timeout" and not events[-1].approved


async def test_approving_for_the_task_lets_later_calls_of_that_tool_run_without_asking(store: ApprovalStore) -> None:
    broker = ApprovalBroker(store, timeout=60, poll=0.05)
    waiting = await Step().waiting(broker)
    await broker.decide("t1", "n1", approve=True, by="alice", for_task=True)
    assert (await asyncio.wait_for(waiting, 10)).approved
    step = Step()
    decision = await step.ask(broker, node="n2")
    later = step.events
    assert decision.approved and decision.by == "task" and decision.reason == "rm was approved for this task"
    assert len(later) == 1 and isinstance(later[0], ApprovalGiven) and later[0].by == "task"


async def test_a_denial_for_the_task_approves_nothing_later(store: ApprovalStore) -> None:
    broker = ApprovalBroker(store, timeout=60, poll=0.05)
    waiting = await Step().waiting(broker)
    await broker.decide("t1", "n1", approve=False, by="alice", for_task=True)
    assert not (await asyncio.wait_for(waiting, 10)).approved
    assert not store.approved_for_task("t1", "rm")


async def test_a_question_answered_before_the_step_asks_again_is_not_asked_twice(store: ApprovalStore) -> None:
    ask(store, user="alice")
    store.decide("t1", "n1", approve=True, by="bob", reason="earlier")
    step = Step()
    decision = await step.ask(ApprovalBroker(store, timeout=60))
    assert decision.approved and decision.by == "bob" and decision.reason == "earlier"
    assert [type(e) for e in step.events] == [ApprovalGiven]


async def test_an_approval_of_one_step_is_not_one_for_the_task(store: ApprovalStore) -> None:
    broker = ApprovalBroker(store, timeout=0.3, poll=0.05)
    waiting = await Step().waiting(broker)
    await broker.decide("t1", "n1", approve=True, by="alice")
    assert (await asyncio.wait_for(waiting, 10)).approved
    step = Step()
    decision = await asyncio.wait_for(step.ask(broker, node="n2"), 10)
    assert step.asked.is_set() and not decision.approved and decision.by == "timeout", "the next call asks again"


async def test_the_task_wide_answer_is_reported_for_the_step_it_lets_through(store: ApprovalStore) -> None:
    store.approve_tool_for_task("t1", "rm", user_id="alice", by="alice")
    step = Step()
    await step.ask(ApprovalBroker(store), node="n7")
    (given,) = step.events
    assert isinstance(given, ApprovalGiven)
    assert (given.task_id, given.node_id, given.approved, given.by, given.reason) == (
        "t1", "n7", True, "task", "rm was approved for this task")


async def test_pending_questions_through_the_broker_are_filtered_by_task(store: ApprovalStore) -> None:
    ask(store, "n1")
    ask(store, "n1", task="t2")
    broker = ApprovalBroker(store)
    assert [q.task_id for q in await broker.pending(task_id="t2")] == ["t2"]
    assert [q.task_id for q in await broker.pending(user_id="alice")] == ["t1", "t2"]


def test_a_user_s_gate_asks_the_tool_with_the_call_s_arguments(store: ApprovalStore) -> None:
    gate = ApprovalBroker(store).for_user("alice")
    assert gate.reason_for(rm_tool(requires_approval=lambda a: f"deletes {a['p']}"), {"p": "/home"}) == "deletes /home"


def test_a_broker_from_settings_keeps_its_questions_in_saber_s_database(tmp_path: Path) -> None:
    from saber.config import Settings

    broker = ApprovalBroker.from_settings(Settings(home=tmp_path / "home", approval={"timeout": 7, "tools": ["rm"]}))
    try:
        assert broker.timeout == 7 and broker.always_ask == frozenset({"rm"})
        broker.store.ask(task_id="t1", node_id="n1", user_id="u", tool="rm", params={}, reason="r")
    finally:
        broker.close()
    again = ApprovalBroker.from_settings(Settings(home=tmp_path / "home"))
    try:
        assert again.store.get("t1", "n1") is not None, "the question outlives the process that asked it"
    finally:
        again.close()
