"""Approvals end to end through the Agent: a step waits for a person's yes while the rest of
the graph runs; approve, deny, time out, approve for the task, and a waiting task that is
interrupted, answered meanwhile and resumed runs the step exactly once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from saber.agent import Agent
from saber.config import Settings
from saber.events import ApprovalGiven, ApprovalRequired, Event, NodeDone
from saber.testing import ScriptedModel
from saber.tools import tool

RUNS: list[str] = []


@tool(requires_approval=True)
async def delete_everything(target: str) -> str:
    """Delete a target (a test tool that only records that it ran).

    Args:
        target: What to delete.
    """
    RUNS.append(target)
    return f"deleted {target}"


@tool
async def look_around(place: str) -> str:
    """Look around a place.

    Args:
        place: Where.
    """
    await asyncio.sleep(0.05)
    return f"{place} looks fine"


def plan(*nodes: dict[str, Any]) -> str:
    return json.dumps(list(nodes))


DELETE = {"id": "n1", "type": "tool", "tool": "delete_everything", "params": {"target": "old logs"}, "depends_on": []}
LOOK = {"id": "n2", "type": "tool", "tool": "look_around", "params": {"place": "the yard"}, "depends_on": []}


@pytest.fixture(autouse=True)
def _clear() -> None:
    RUNS.clear()


def agent_for(tmp_path: Path, replies: list[str], **settings: Any) -> Agent:
    values: dict[str, Any] = {"home": tmp_path / "home", "search": {"backend": "none"}, "graph": {"retry_delay": 0.0}}
    for section, items in settings.items():  # a section's keys over the defaults above, one by one
        values[section] = {**values.get(section, {}), **items} if isinstance(items, dict) else items
    return Agent(Settings(**values), model=ScriptedModel(replies), tools=[delete_everything, look_around])


async def collect_answering(agent: Agent, query: str, answer: Any) -> list[Event]:
    """Run a react request; when a step asks, ``answer(question)`` decides (or not)."""
    events: list[Event] = []
    async for event in agent.stream(query, user_id="alice", mode="react"):
        events.append(event)
        if isinstance(event, ApprovalRequired):
            await answer(event)
    return events


async def test_approved_step_runs_once_and_others_do_not_wait(tmp_path: Path) -> None:
    agent = agent_for(tmp_path, [plan(DELETE, LOOK), "Deleted the old logs; the yard looks fine."])
    events: list[Event] = []
    async with agent:
        asked: ApprovalRequired | None = None
        async for event in agent.stream("delete the old logs and look around the yard", user_id="alice", mode="react"):
            events.append(event)
            if isinstance(event, ApprovalRequired):
                asked = event
            if isinstance(event, NodeDone) and event.id == "n2":  # the other branch ran while n1 waited
                assert asked is not None and RUNS == []
                await agent.approvals.decide(asked.task_id, asked.node_id, approve=True, by="alice")
    kinds = [e.type for e in events]
    assert kinds.index("approval_required") < kinds.index("approval_given")
    asked = next(e for e in events if isinstance(e, ApprovalRequired))
    assert (asked.node_id, asked.tool, asked.params) == ("n1", "delete_everything", {"target": "old logs"})
    assert "requires approval" in asked.reason
    look_done = next(i for i, e in enumerate(events) if isinstance(e, NodeDone) and e.id == "n2")
    assert look_done < kinds.index("approval_given"), "the other branch waited for the approval"
    given = next(e for e in events if isinstance(e, ApprovalGiven))
    assert given.approved and given.by == "alice"
    assert RUNS == ["old logs"]
    assert events[-1].data["answer"] == "Deleted the old logs; the yard looks fine."


async def test_a_question_keeps_no_secret_of_its_step(tmp_path: Path) -> None:
    """Issue 28, item 6: the approvals table and the question shown hold the step's params redacted;
    the approved step runs with the real ones."""
    import sqlite3

    secret = {"id": "n1", "type": "tool", "tool": "delete_everything",
              "params": {"target": "logs of db password is hunter2-XYZ"}, "depends_on": []}
    agent = agent_for(tmp_path, [plan(secret), "Done."])
    async with agent:
        async def approve(q: ApprovalRequired) -> None:
            await agent.approvals.decide(q.task_id, q.node_id, approve=True, by="alice")

        events = await collect_answering(agent, "delete them", approve)
    asked = next(e for e in events if isinstance(e, ApprovalRequired))
    assert asked.params == {"target": "logs of db [redacted]"}
    assert RUNS == ["logs of db password is hunter2-XYZ"]
    with sqlite3.connect(tmp_path / "home" / "saber.db") as db:
        rows = db.execute("SELECT params FROM saber_approvals").fetchall()
    assert rows and all("hunter2" not in row[0] for row in rows)


async def test_denied_step_fails_without_running_and_the_generator_is_told(tmp_path: Path) -> None:
    model_replies = [plan(DELETE, LOOK), "I did not delete the logs: you refused."]
    agent = agent_for(tmp_path, model_replies)
    async with agent:
        async def deny(q: ApprovalRequired) -> None:
            await agent.approvals.decide(q.task_id, q.node_id, approve=False, by="alice", reason="keep them")

        events = await collect_answering(agent, "delete the old logs and look around the yard", deny)
        model = agent.model
    assert RUNS == []
    failed = next(e for e in events if isinstance(e, NodeDone) and e.id == "n1")
    assert failed.status == "failed" and failed.error == "denied by the user: keep them"
    assert isinstance(model, ScriptedModel)
    assert "denied by the user: keep them" in model.calls[-1].prompt


async def test_no_answer_in_time_denies(tmp_path: Path) -> None:
    agent = agent_for(tmp_path, [plan(DELETE), "Not done."], approval={"timeout": 0.3})
    async with agent:
        async def ignore(q: ApprovalRequired) -> None:
            return None

        events = await collect_answering(agent, "delete the old logs", ignore)
    assert RUNS == []
    given = next(e for e in events if isinstance(e, ApprovalGiven))
    assert not given.approved and given.by == "timeout"
    failed = next(e for e in events if isinstance(e, NodeDone) and e.id == "n1")
    assert failed.error == "not approved: no answer within 0.3 s"


async def test_approve_for_the_task_covers_later_calls_of_the_same_tool(tmp_path: Path) -> None:
    second = {**DELETE, "id": "n3", "params": {"target": "old caches"}, "depends_on": ["n1"]}
    agent = agent_for(tmp_path, [plan(DELETE, second), "Both deleted."])
    asked: list[str] = []
    async with agent:
        async def approve_all(q: ApprovalRequired) -> None:
            asked.append(q.node_id)
            await agent.approvals.decide(q.task_id, q.node_id, approve=True, by="alice", for_task=True)

        events = await collect_answering(agent, "delete the old logs, then the old caches", approve_all)
    assert asked == ["n1"]
    assert RUNS == ["old logs", "old caches"]
    by = [e.by for e in events if isinstance(e, ApprovalGiven)]
    assert by == ["alice", "task"]


async def test_configured_tools_ask_too(tmp_path: Path) -> None:
    agent = agent_for(tmp_path, [plan(LOOK), "Looked."], approval={"tools": ["look_around"]})
    async with agent:
        async def approve(q: ApprovalRequired) -> None:
            assert q.reason == "look_around is set to ask before it runs (approval.tools)"
            await agent.approvals.decide(q.task_id, q.node_id, approve=True, by="alice")

        events = await collect_answering(agent, "look around the yard", approve)
    assert any(isinstance(e, ApprovalGiven) and e.approved for e in events)


async def test_an_interrupted_waiting_task_answered_later_runs_the_step_once_on_resume(tmp_path: Path) -> None:
    agent = agent_for(tmp_path, [plan(DELETE, LOOK), "Deleted after all."])
    async with agent:
        task_id = ""
        async for event in agent.stream("delete the old logs and look around the yard", user_id="alice", mode="react"):
            if isinstance(event, ApprovalRequired):
                task_id = event.task_id
                assert agent.cancel(task_id)
        assert RUNS == []
        pending = await agent.approvals.pending(user_id="alice")
        assert [(q.task_id, q.node_id) for q in pending] == [(task_id, "n1")]
        assert await agent.approvals.pending(user_id="mallory") == []
        await agent.approvals.decide(task_id, "n1", approve=True, by="alice")
        resumed = [e async for e in agent.resume(task_id, user_id="alice")]
    assert RUNS == ["old logs"]
    assert not any(isinstance(e, ApprovalRequired) for e in resumed)
    assert any(isinstance(e, ApprovalGiven) and e.approved for e in resumed)
    assert resumed[-1].data["answer"] == "Deleted after all."


async def test_the_wait_for_an_approval_does_not_count_against_the_request_deadline(tmp_path: Path) -> None:
    """approval.timeout bounds a person's answer, not request_deadline: a yes given after the
    request's deadline would have passed still runs the step and the answer is written."""
    agent = agent_for(tmp_path, [plan(DELETE), "Deleted the old logs."], agent={"request_deadline": 1.0})
    async with agent:
        async def approve_late(q: ApprovalRequired) -> None:
            async def later() -> None:
                await asyncio.sleep(1.5)
                await agent.approvals.decide(q.task_id, q.node_id, approve=True, by="alice")

            asyncio.get_running_loop().create_task(later())

        events = await collect_answering(agent, "delete the old logs", approve_late)
    assert RUNS == ["old logs"]
    assert [e.data["where"] for e in events if e.type == "error"] == []
    assert events[-1].data["answer"] == "Deleted the old logs."
