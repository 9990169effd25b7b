"""Running nodes (``saber.graph.execute``) where mutation testing (``python bench/mutation.py
graph-execute``) found it unchecked: a race whose bookkeeping crashed leaves its group free for
a member written later, a big result from an async tool cut to the limit, a sync callable that hands back a
coroutine, a stuck tool's own time limit, what each attempt announces, the time a refused call waited."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from typing import Any

import pytest
from graph_testkit import Recorder, fn_tool, until

from saber.graph import GraphConfig, GraphRuntime, Node, NodeStatus, SubAgentTask, execute
from saber.graph.approval import Decision, approving_with
from saber.graph.races import Race
from saber.tools import ToolError

CRASH = "internal error: RuntimeError('race bookkeeping bug')"


async def test_a_member_written_after_its_race_crashed_still_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(self: Race) -> None:
        raise RuntimeError("race bookkeeping bug")

    monkeypatch.setattr(Race, "run", broken)
    rec = Recorder()
    first_done = rec.seen("node_done", id="r1")
    runtime = GraphRuntime([], {"t": fn_tool("t", lambda a: "ok")}, GraphConfig(), on_event=rec)
    runtime.open_feed()
    run = asyncio.create_task(runtime.run())
    runtime.add_nodes([Node(id="r1", tool="t", race_group="g")])
    await until(first_done, run)  # the crashed race's outcome is applied
    runtime.add_nodes([Node(id="r2", tool="t", race_group="g")])
    runtime.close_feed()
    result = await run
    assert result.nodes["r1"].error == CRASH
    assert result.nodes["r2"].status is NodeStatus.DONE and result.nodes["r2"].result == "ok", \
        "the crashed race is over: r2 is not left waiting on it"


@pytest.mark.parametrize("size", [70_000, 6_000])
async def test_a_big_result_of_an_async_tool_is_cut_to_the_limit_with_a_note(size: int) -> None:
    async def big(args: dict[str, Any]) -> Any:
        return "x" * size if size > 10_000 else list(range(size))

    result = await GraphRuntime([Node(id="n1", tool="big")], {"big": fn_tool("big", big)},
                                GraphConfig(max_result_chars=1000)).run()
    node = result.nodes["n1"]
    assert node.status is NodeStatus.DONE, node.error
    assert len(node.result) < 1200 and "graph.max_result_chars" in node.result and "1,000" in node.result


async def test_a_sync_callable_that_returns_a_coroutine_gives_the_coroutines_result() -> None:
    async def lookup(args: dict[str, Any]) -> dict[str, str]:
        return {"city": "Lyon"}

    tool = fn_tool("lookup", lambda args: lookup(args))  # a plain function: it runs in a thread
    assert tool.is_sync
    result = await GraphRuntime([Node(id="n1", tool="lookup")], {"lookup": tool}, GraphConfig()).run()
    assert result.nodes["n1"].status is NodeStatus.DONE and result.nodes["n1"].result == {"city": "Lyon"}


async def test_a_stuck_sync_tool_with_its_own_time_limit_is_stopped_after_the_grace(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(execute, "OWN_TIMEOUT_GRACE", 0.05)  # 5 s in real use
    unblock = threading.Event()

    def stuck(args: dict[str, Any]) -> str:  # ignores its own limit
        unblock.wait(60)
        return "late"

    limited = dataclasses.replace(fn_tool("stuck", stuck), timeout=0.01)
    try:
        result = await GraphRuntime([Node(id="n1", tool="stuck")], {"stuck": limited},
                                    GraphConfig(step_timeout=0.01, max_attempts=1)).run()
    finally:
        unblock.set()
    assert result.nodes["n1"].status is NodeStatus.FAILED
    assert result.nodes["n1"].error == "timed out after 60 ms", "its own limit plus the grace, not the step timeout"


def _busy_once() -> Any:
    """A tool function that fails once with a retryable error, then answers "ok"."""
    failures = [ToolError("busy", retryable=True)]

    async def flaky(args: dict[str, Any]) -> str:
        if failures:
            raise failures.pop()
        return "ok"

    return flaky


async def test_every_attempt_announces_its_node_tool_and_number() -> None:
    flaky = _busy_once()

    rec = Recorder()
    await GraphRuntime([Node(id="n1", tool="flaky")], {"flaky": fn_tool("flaky", flaky)},
                       GraphConfig(retry_delay=0), rec).run()
    assert [(e.id, e.tool, e.attempt) for e in rec.of("node_start")] == [  # type: ignore[attr-defined]
        ("n1", "flaky", 1), ("n1", "flaky", 2)]


async def test_a_refused_call_reports_the_time_it_waited_for_its_answer() -> None:
    answered = asyncio.Event()
    waited: list[float] = []

    class Gate:
        def reason_for(self, tool: Any, args: Any) -> str | None:
            return "asks" if tool.name == "guarded" else None

        async def request(self, **kwargs: Any) -> Decision:
            asked = time.perf_counter()
            await answered.wait()
            waited.append(time.perf_counter() - asked)
            return Decision(approved=False, by="bob")

    rec = Recorder()
    other_done = rec.seen("node_done", id="other")
    nodes = [Node(id="ask", tool="guarded"), Node(id="other", tool="t")]
    tools = {"guarded": fn_tool("guarded", lambda a: "ok"), "t": fn_tool("t", lambda a: "ok")}
    with approving_with(Gate()):
        before = time.perf_counter()
        run = asyncio.create_task(GraphRuntime(nodes, tools, on_event=rec).run())
        await until(other_done, run)
        answered.set()
        result = await run
        elapsed = time.perf_counter() - before
    ask = result.nodes["ask"]
    assert ask.status is NodeStatus.FAILED and ask.error == "denied by the user"
    assert ask.duration_ms is not None and waited[0] * 1000 <= ask.duration_ms <= elapsed * 1000


async def test_a_retry_is_announced_as_a_thought_naming_the_node_the_failure_and_the_wait() -> None:
    flaky = _busy_once()

    rec = Recorder()
    await GraphRuntime([Node(id="n1", tool="flaky")], {"flaky": fn_tool("flaky", flaky)},
                       GraphConfig(retry_delay=0.002, retry_jitter=0.0), rec).run()
    thoughts = [e for e in rec.of("step") if e.kind not in ("action", "observation")]  # type: ignore[attr-defined]
    assert [(e.kind, e.node_id, e.tool, e.content) for e in thoughts] == [  # type: ignore[attr-defined]
        ("thought", "n1", "flaky", "n1 attempt 1 failed: busy; retrying in 2 ms")]
    assert rec.events.index(thoughts[0]) < rec.index("node_start", attempt=2)


@pytest.mark.parametrize("outcome", ["done", "failed"])
async def test_a_nodes_duration_covers_its_call_and_no_more(outcome: str) -> None:
    release = asyncio.Event()
    spans: list[float] = []

    async def work(args: dict[str, Any]) -> str:
        began = time.perf_counter()
        await release.wait()
        spans.append(time.perf_counter() - began)
        if outcome == "failed":
            raise ToolError("refused", retryable=False)
        return "ok"

    rec = Recorder()
    other_done = rec.seen("node_done", id="other")
    tools = {"work": fn_tool("work", work), "t": fn_tool("t", lambda a: "ok")}
    before = time.perf_counter()
    run = asyncio.create_task(GraphRuntime([Node(id="n1", tool="work"), Node(id="other", tool="t")], tools,
                                           on_event=rec).run())
    await until(other_done, run)
    release.set()
    result = await run
    elapsed = time.perf_counter() - before
    node = result.nodes["n1"]
    assert node.status.value == outcome
    assert node.duration_ms is not None and spans[0] * 1000 <= node.duration_ms <= elapsed * 1000
    done = [e for e in rec.of("node_done") if e.id == "n1"]  # type: ignore[attr-defined]
    assert done[0].duration_ms == node.duration_ms  # type: ignore[attr-defined]


async def test_a_node_without_dependencies_gets_dollar_braces_text_unchanged() -> None:
    schema = {"type": "object", "properties": {"command": {"type": "string"}}}
    shell = fn_tool("shell", lambda args: args["command"], schema)
    result = await GraphRuntime([Node(id="n1", tool="shell", params={"command": "echo ${HOME}"})],
                                {"shell": shell}).run()
    assert result.nodes["n1"].status is NodeStatus.DONE and result.nodes["n1"].result == "echo ${HOME}"


async def test_a_sub_agent_is_told_its_name_and_attempt_and_announced_as_an_action() -> None:
    seen: list[SubAgentTask] = []

    class Writer:
        async def run(self, task: SubAgentTask) -> Any:
            seen.append(task)
            if task.attempt == 1:
                raise ToolError("model overloaded", retryable=True)
            return "written"

    nodes = [Node(id="w", type="sub_agent", agent="writer", goal="write the summary", params={"words": 50}),
             Node(id="bare", type="sub_agent", agent="writer")]
    rec = Recorder()
    result = await GraphRuntime(nodes, {}, GraphConfig(retry_delay=0), rec, agents={"writer": Writer()},
                                task_id="t-2").run()
    assert result.nodes["w"].result == "written" and result.nodes["w"].attempts == 2
    mine = [t for t in seen if t.node_id == "w"]
    assert [(t.agent, t.attempt, t.task_id, dict(t.params)) for t in mine] == [
        ("writer", 1, "t-2", {"words": 50}), ("writer", 2, "t-2", {"words": 50})]
    actions = [(e.node_id, e.kind, e.content, e.tool, e.params)  # type: ignore[attr-defined]
               for e in rec.of("step") if e.kind == "action"]  # type: ignore[attr-defined]
    assert actions.count(("w", "action", "write the summary", "writer", {"words": 50})) == 2
    assert ("bare", "action", "writer", "writer", {}) in actions, "without a goal, the action names the agent"


@pytest.mark.parametrize("agents, known", [({}, "none"), ({"writer": None, "critic": None}, "critic, writer")])
async def test_an_unknown_agent_fails_at_once_naming_the_known_ones(agents: dict[str, Any], known: str) -> None:
    result = await GraphRuntime([Node(id="g", type="sub_agent", agent="ghost")], {}, GraphConfig(max_attempts=3),
                                agents=agents).run()
    assert result.nodes["g"].error == f"unknown agent: ghost (known: {known})" and result.nodes["g"].attempts == 1


async def test_a_tool_call_is_announced_as_an_action_with_its_checked_arguments() -> None:
    schema = {"type": "object", "properties": {"count": {"type": "integer"}}}
    rec = Recorder()
    await GraphRuntime([Node(id="n1", tool="count", params={"count": "3"})],
                       {"count": fn_tool("count", lambda a: a["count"] + 1, schema)}, GraphConfig(), rec).run()
    actions = [(e.kind, e.node_id, e.content, e.tool, e.params)  # type: ignore[attr-defined]
               for e in rec.of("step") if e.kind == "action"]  # type: ignore[attr-defined]
    assert actions == [("action", "n1", "count", "count", {"count": 3})]
    assert rec.index("step", node_id="n1") < rec.index("node_done", id="n1")
