"""Eager dispatch, max_parallel, placeholders, sub-agents, failure policy, events."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from graph_testkit import Gate, Recorder, fn_tool

from saber.events import RagResult, emit
from saber.graph import GraphConfig, GraphError, GraphRuntime, Node, NodeStatus, SubAgentTask, TaskGraph
from saber.tools import tool


async def test_a_fast_branch_does_not_wait_for_a_slow_sibling() -> None:
    gate = Gate("wait")
    chain_done = asyncio.Event()

    async def finish(args: dict[str, Any]) -> str:
        chain_done.set()
        return "chain"

    tools = {"wait": gate.tool(), "finish": fn_tool("finish", finish), "quick": fn_tool("quick", lambda a: "q")}
    graph = TaskGraph([
        Node(id="slow", tool="wait", params={"key": "slow"}),
        Node(id="fast", tool="quick"),
        Node(id="after_fast", tool="finish", depends_on=["fast"]),
        Node(id="after_slow", tool="quick", depends_on=["slow"]),
    ])
    run = asyncio.create_task(GraphRuntime(graph, tools, GraphConfig()).run())
    await chain_done.wait()  # the second level of the fast branch ran while "slow" is still blocked
    assert graph["slow"].status is NodeStatus.RUNNING
    assert graph["after_slow"].status is NodeStatus.PENDING
    gate.release_event("slow").set()
    result = await run
    assert result.status == "done"


async def test_max_parallel_bounds_everything_the_graph_runs_races_included() -> None:
    active = 0
    peak = 0
    full = asyncio.Event()
    release = asyncio.Event()

    async def work(args: dict[str, Any]) -> str:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        if active == 3:
            full.set()
        try:
            await release.wait()
        finally:
            active -= 1
        return "x"

    tools = {"work": fn_tool("work", work)}
    nodes = [Node(id=f"p{i}", tool="work") for i in range(5)]
    nodes += [Node(id=f"r{i}", tool="work", race_group="g") for i in range(3)]
    run = asyncio.create_task(GraphRuntime(TaskGraph(nodes), tools, GraphConfig(max_parallel=3)).run())
    await full.wait()
    for _ in range(20):  # give the scheduler every chance to (wrongly) start more
        await asyncio.sleep(0)
    assert peak == 3
    release.set()
    result = await run
    assert peak == 3
    assert [n.status for n in result.nodes.values()].count(NodeStatus.DONE) == 6  # 5 plain + 1 race winner


async def test_placeholders_carry_upstream_results_into_params_and_are_validated() -> None:
    @tool
    def city() -> dict[str, Any]:
        """A structured result."""
        return {"name": "Beijing", "days": "3"}

    @tool
    def forecast(place: str, days: int) -> str:
        """Uses upstream values; days is coerced from "3"."""
        return f"{place}:{days * 2}"

    graph = TaskGraph([
        Node(id="n1", tool="city"),
        Node(id="n2", tool="forecast", params={"place": "{{n1.name}}", "days": "${n1.days}"}, depends_on=["n1"]),
        Node(id="n3", tool="forecast", params={"place": "at $n2", "days": "x"}, depends_on=["n2"]),
    ])
    result = await GraphRuntime(graph, {"city": city, "forecast": forecast}, GraphConfig()).run()
    assert result.nodes["n2"].result == "Beijing:6"
    assert result.nodes["n3"].status is NodeStatus.FAILED
    assert "days" in (result.nodes["n3"].error or "")
    assert result.nodes["n3"].attempts == 1  # a validation error is not retried


async def test_sub_agents_get_goal_params_and_upstream_mapping() -> None:
    seen: list[SubAgentTask] = []

    class Writer:
        async def run(self, task: SubAgentTask) -> Any:
            seen.append(task)
            return {"report": f"{task.goal} from {sorted(task.upstream)}"}

    graph = TaskGraph([
        Node(id="n1", tool="search"),
        Node(id="n2", type="sub_agent", agent="writer", goal="write it", params={"topic": "$n1"}, depends_on=["n1"]),
        Node(id="n3", type="sub_agent", agent="ghost", goal="nobody", depends_on=["n1"]),
    ])
    result = await GraphRuntime(graph, {"search": fn_tool("search", lambda a: "facts")}, GraphConfig(),
                                agents={"writer": Writer()}, task_id="t-1").run()
    (task,) = seen
    assert task.upstream == {"n1:search": "facts"}
    assert task.params == {"topic": "facts"} and task.node_id == "n2" and task.task_id == "t-1"
    assert result.nodes["n2"].result == {"report": "write it from ['n1:search']"}
    assert result.nodes["n3"].status is NodeStatus.FAILED
    assert result.nodes["n3"].error == "unknown agent: ghost (known: writer)"
    assert result.nodes["n3"].attempts == 1


async def test_sub_agents_have_their_own_longer_timeout() -> None:
    gate = Gate("wait")
    rec = Recorder()
    tool_failed = rec.seen("node_done", id="tool")

    class Slow:
        async def run(self, task: SubAgentTask) -> Any:
            await tool_failed.wait()  # outlives both attempts of the tool, each timed out
            return "agent finished"

    graph = TaskGraph([
        Node(id="tool", tool="wait", params={"key": "tool"}),
        Node(id="agent", type="sub_agent", agent="slow", goal="g"),
    ])
    config = GraphConfig(step_timeout=0.02, sub_agent_timeout=60, max_attempts=2, retry_delay=0)
    result = await GraphRuntime(graph, {"wait": gate.tool()}, config, rec, agents={"slow": Slow()}).run()
    assert result.nodes["tool"].status is NodeStatus.FAILED
    assert result.nodes["tool"].error == "timed out after 20 ms" and result.nodes["tool"].attempts == 2
    assert gate.cancelled == ["tool", "tool"]
    assert result.nodes["agent"].result == "agent finished" and result.nodes["agent"].attempts == 1


async def test_a_sync_tool_is_abandoned_at_its_timeout() -> None:
    unblock = threading.Event()

    def stuck(args: dict[str, Any]) -> str:
        unblock.wait(60)
        return "late"

    graph = TaskGraph([Node(id="n1", tool="stuck"), Node(id="n2", tool="ok", depends_on=["n1"])])
    tools = {"stuck": fn_tool("stuck", stuck), "ok": fn_tool("ok", lambda a: "ok")}
    try:
        result = await GraphRuntime(graph, tools, GraphConfig(step_timeout=0.03, max_attempts=1)).run()
    finally:
        unblock.set()
    assert result.nodes["n1"].status is NodeStatus.FAILED and "timed out" in (result.nodes["n1"].error or "")
    assert result.nodes["n2"].status is NodeStatus.SKIPPED
    assert result.nodes["n2"].error == "n1 failed: timed out after 30 ms"


async def test_dependents_of_a_failure_are_skipped_transitively_with_the_reason() -> None:
    def boom(args: dict[str, Any]) -> str:
        raise ValueError("bad data")

    graph = TaskGraph([
        Node(id="n1", tool="boom"),
        Node(id="n2", tool="ok", depends_on=["n1"]),
        Node(id="n3", tool="ok", depends_on=["n2"]),
        Node(id="n4", tool="ok"),
    ])
    tools = {"boom": fn_tool("boom", boom), "ok": fn_tool("ok", lambda a: "ok")}
    result = await GraphRuntime(graph, tools, GraphConfig()).run()
    assert result.status == "failed"
    assert result.nodes["n1"].error == "ValueError: bad data"
    assert result.nodes["n1"].attempts == 1  # a plain exception is a bug, not retried
    assert [result.nodes[n].status for n in ("n2", "n3", "n4")] == [NodeStatus.SKIPPED, NodeStatus.SKIPPED, NodeStatus.DONE]
    assert result.nodes["n2"].error == result.nodes["n3"].error == "n1 failed: ValueError: bad data"
    assert result.errors == {"n1": "ValueError: bad data"}


async def test_on_failure_continue_hands_the_failure_to_dependents() -> None:
    def boom(args: dict[str, Any]) -> str:
        raise ConnectionRefusedError("backend refused")

    got: list[Any] = []

    def consume(args: dict[str, Any]) -> str:
        got.append(args["x"])
        return "handled"

    graph = TaskGraph([Node(id="n1", tool="boom"), Node(id="n2", tool="use", params={"x": "$n1"}, depends_on=["n1"])])
    tools = {"boom": fn_tool("boom", boom), "use": fn_tool("use", consume, {"type": "object", "properties": {"x": {}}})}
    config = GraphConfig(on_failure="continue", max_attempts=2, retry_delay=0)
    result = await GraphRuntime(graph, tools, config).run()
    assert result.nodes["n1"].attempts == 2  # a refused connection is worth another attempt
    assert got == [{"error": "connection error: ConnectionRefusedError: backend refused", "status": "failed"}]
    assert result.nodes["n2"].status is NodeStatus.DONE


async def test_event_order_a_ui_can_rely_on() -> None:
    rec = Recorder()

    @tool
    async def rag(q: str) -> str:
        """Emits a rag_result into the request's stream, as rag_search does."""
        emit(RagResult(query=q, hits=[]))
        return q

    @tool
    def sync_rag(q: str) -> str:
        """The same from a worker thread."""
        emit(RagResult(query=q, hits=[]))
        return q

    def boom(args: dict[str, Any]) -> str:
        raise RuntimeError("x")

    graph = TaskGraph([
        Node(id="a", tool="rag", params={"q": "a"}),
        Node(id="b", tool="sync_rag", params={"q": "b"}, depends_on=["a"]),
        Node(id="c", tool="boom"),
        Node(id="d", tool="rag", params={"q": "d"}, depends_on=["c"]),
    ])
    tools = {"rag": rag, "sync_rag": sync_rag, "boom": fn_tool("boom", boom)}
    await GraphRuntime(graph, tools, GraphConfig(), on_event=rec).run()
    await asyncio.sleep(0)  # let the thread's event, handed to the loop, be delivered
    assert rec.events[0].type == "graph_ready"
    done_ids = [e.id for e in rec.of("node_done")]  # type: ignore[attr-defined]
    assert sorted(done_ids) == ["a", "b", "c", "d"]  # exactly one node_done per node
    for node_id in ("a", "b", "c"):
        assert rec.index("node_start", id=node_id) < rec.index("node_done", id=node_id)
    assert rec.index("node_done", id="a") < rec.index("node_start", id="b")  # a parent is announced before its child starts
    assert not any(e.type == "node_start" and e.id == "d" for e in rec.events)  # type: ignore[attr-defined]
    assert sorted(e.query for e in rec.of("rag_result")) == ["a", "b"]  # type: ignore[attr-defined]
    assert rec.index("node_start", id="a") < rec.index("rag_result", query="a") < rec.index("node_done", id="a")


async def test_an_async_event_handler_is_awaited_and_a_failing_one_does_not_break_the_run() -> None:
    seen: list[str] = []

    async def handler(event: Any) -> None:
        await asyncio.sleep(0)
        seen.append(event.type)
        if event.type == "node_start":
            raise RuntimeError("listener bug")

    graph = TaskGraph([Node(id="n1", tool="ok")])
    result = await GraphRuntime(graph, {"ok": fn_tool("ok", lambda a: 1)}, GraphConfig(), on_event=handler).run()
    assert result.ok
    assert seen[:3] == ["graph_ready", "node_start", "step"] and "node_done" in seen


def test_a_race_member_that_depends_on_its_own_group_is_rejected() -> None:
    graph = TaskGraph([Node(id="a", tool="t", race_group="g"), Node(id="b", tool="t", race_group="g", depends_on=["a"])])
    with pytest.raises(GraphError, match="race group 'g': b depends on a"):
        GraphRuntime(graph, {}, GraphConfig())
    GraphRuntime(graph, {}, GraphConfig(enable_racing=False))  # fine as plain nodes


async def test_a_runtime_runs_once() -> None:
    rt = GraphRuntime(TaskGraph([Node(id="n1", tool="ok")]), {"ok": fn_tool("ok", lambda a: 1)}, GraphConfig())
    await rt.run()
    with pytest.raises(RuntimeError, match="runs once"):
        await rt.run()
