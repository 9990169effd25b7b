"""A tool call that needs a person's yes, seen from the graph runtime (``approving_with``): the gate
is asked with the call as it will run, a denial or no answer fails the node without calling the
tool, the wait holds no parallel slot, and a gate that crashes fails only that node. The broker
behind the gate is tested in tests/integration/approvals."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import pytest
from graph_testkit import Recorder, fn_tool, until

from saber.events import ApprovalRequired, Event
from saber.graph import GraphConfig, GraphRuntime, Node, NodeStatus
from saber.graph.approval import Decision, approving_with
from saber.tools import Tool

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}, "count": {"type": "integer"}}}


class Gate:
    """Asks for ``guarded`` tools only; answers with ``decision`` once ``answer`` is set."""

    def __init__(self, decision: Decision, *, guarded: tuple[str, ...] = ("write",)) -> None:
        self.decision = decision
        self.guarded = guarded
        self.asked: list[dict[str, Any]] = []
        self.waiting = asyncio.Event()
        self.answer = asyncio.Event()
        self.answer.set()

    def reason_for(self, tool: Tool, args: Mapping[str, Any]) -> str | None:
        return f"{tool.name} changes {args.get('path')}" if tool.name in self.guarded else None

    async def request(self, *, task_id: str, node_id: str, tool: str, params: Mapping[str, Any], reason: str,
                      emit: Callable[[Event], Awaitable[None]]) -> Decision:
        self.asked.append({"task_id": task_id, "node_id": node_id, "tool": tool, "params": dict(params),
                           "reason": reason})
        await emit(ApprovalRequired(task_id=task_id, node_id=node_id, tool=tool, params=dict(params), reason=reason))
        self.waiting.set()
        await self.answer.wait()
        return self.decision


def tools(calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Tool]:
    def recorded(name: str, result: Any) -> Tool:
        def run(args: dict[str, Any]) -> Any:
            calls.append((name, args))
            return result

        return fn_tool(name, run, SCHEMA)

    return {"read": recorded("read", "notes.txt"), "write": recorded("write", "written"),
            "count": recorded("count", 3)}


async def test_the_gate_is_asked_with_the_call_as_it_will_run_and_an_approved_call_runs() -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    gate = Gate(Decision(approved=True, by="alice"))
    nodes = [Node(id="find", tool="read"), Node(id="n", tool="count"),
             Node(id="save", tool="write", params={"path": "out/${find}", "count": "${n}"}, depends_on=["find", "n"])]
    rec = Recorder()
    with approving_with(gate):
        result = await GraphRuntime(nodes, tools(calls), GraphConfig(), rec, task_id="task-7").run()
    assert result.status == "done" and result.nodes["save"].result == "written"
    assert gate.asked == [{"task_id": "task-7", "node_id": "save", "tool": "write",
                           "params": {"path": "out/notes.txt", "count": 3}, "reason": "write changes out/notes.txt"}]
    assert ("write", {"path": "out/notes.txt", "count": 3}) in calls
    asked = rec.of("approval_required")
    assert [(e.node_id, e.reason) for e in asked] == [("save", "write changes out/notes.txt")]  # type: ignore[attr-defined]
    assert rec.index("approval_required", node_id="save") < rec.index("node_start", id="save")


async def test_a_denied_call_fails_its_node_without_running_and_its_dependents_are_skipped() -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    gate = Gate(Decision(approved=False, by="bob", reason="not that folder"))
    nodes = [Node(id="save", tool="write", params={"path": "/etc/x"}),
             Node(id="after", tool="read", depends_on=["save"]), Node(id="other", tool="read")]
    with approving_with(gate):
        result = await GraphRuntime(nodes, tools(calls), GraphConfig(max_attempts=3)).run()
    save = result.nodes["save"]
    assert save.status is NodeStatus.FAILED and save.error == "denied by the user: not that folder"
    assert save.duration_ms is not None and save.duration_ms >= 0
    assert result.nodes["after"].status is NodeStatus.SKIPPED
    assert result.nodes["other"].status is NodeStatus.DONE
    assert [name for name, _ in calls] == ["read"], "the denied tool never ran"
    assert len(gate.asked) == 1, "a denial is not retried"


async def test_a_call_without_dependencies_is_asked_about_with_its_text_unchanged() -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    gate = Gate(Decision(approved=True, by="alice"))
    with approving_with(gate):
        result = await GraphRuntime([Node(id="save", tool="write", params={"path": "${HOME}/x"})], tools(calls)).run()
    assert result.nodes["save"].status is NodeStatus.DONE
    assert [a["params"] for a in gate.asked] == [{"path": "${HOME}/x"}] and calls == [("write", {"path": "${HOME}/x"})]


async def test_no_answer_in_time_fails_the_node_saying_so() -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    gate = Gate(Decision(approved=False, by="timeout"))
    with approving_with(gate):
        result = await GraphRuntime([Node(id="save", tool="write", params={"path": "a"})], tools(calls)).run()
    assert result.nodes["save"].error == "not approved: no answer in time" and calls == []


async def test_calls_that_need_no_approval_or_do_not_validate_are_not_asked_about() -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    gate = Gate(Decision(approved=False, by="bob"))
    nodes = [Node(id="r", tool="read", params={"path": "a"}),
             Node(id="bad", tool="write", params={"count": "many"}), Node(id="gone", tool="delete")]
    with approving_with(gate):
        result = await GraphRuntime(nodes, tools(calls), GraphConfig()).run()
    assert result.nodes["r"].status is NodeStatus.DONE
    assert (result.nodes["gone"].error or "").startswith("unknown tool: delete")
    bad = result.nodes["bad"]
    assert bad.status is NodeStatus.FAILED and "count" in (bad.error or "") and "denied" not in (bad.error or "")
    assert gate.asked == [], "a call that fails its own validation is left to fail with the usual message"


async def test_a_call_waiting_for_approval_holds_no_parallel_slot() -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    gate = Gate(Decision(approved=True, by="alice"))
    gate.answer.clear()
    rec = Recorder()
    other_done = rec.seen("node_done", id="other")
    nodes = [Node(id="save", tool="write", params={"path": "a"}), Node(id="other", tool="read")]
    with approving_with(gate):
        run = asyncio.create_task(GraphRuntime(nodes, tools(calls), GraphConfig(max_parallel=1), on_event=rec).run())
        await until(gate.waiting, run)
        await until(other_done, run)  # ran while save waits for its answer, with max_parallel=1
        gate.answer.set()
        result = await run
    assert result.status == "done" and [name for name, _ in calls] == ["read", "write"]


async def test_a_gate_that_crashes_fails_only_that_node_and_names_it_in_the_log(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []

    class Broken(Gate):
        def reason_for(self, tool: Tool, args: Mapping[str, Any]) -> str | None:
            if tool.name == "write":
                raise RuntimeError("gate bug")
            return None

    rec = Recorder()
    nodes = [Node(id="save", tool="write", params={"path": "a"}), Node(id="after", tool="read", depends_on=["save"]),
             Node(id="other", tool="read")]
    with approving_with(Broken(Decision(approved=True, by="alice"))), \
            caplog.at_level(logging.ERROR, logger="saber.graph.execute"):
        result = await GraphRuntime(nodes, tools(calls), GraphConfig(), on_event=rec).run()
    save = result.nodes["save"]
    assert save.status is NodeStatus.FAILED and save.error == "internal error: RuntimeError('gate bug')"
    assert result.nodes["after"].status is NodeStatus.SKIPPED
    assert result.nodes["other"].status is NodeStatus.DONE and [name for name, _ in calls] == ["read"]
    done = {e.id: (e.status, e.error) for e in rec.of("node_done")}  # type: ignore[attr-defined]
    assert done["save"] == ("failed", "internal error: RuntimeError('gate bug')")
    crashes = [r for r in caplog.records if r.name == "saber.graph.execute"]
    assert [r.getMessage() for r in crashes] == ["node save crashed the runtime worker"]
    assert crashes[0].exc_info is not None and "gate bug" in str(crashes[0].exc_info[1])
