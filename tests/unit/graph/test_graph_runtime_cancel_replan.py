"""Cancellation (partial results) and the replanning hook."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from graph_testkit import Gate, Recorder, fn_tool

from saber.graph import GraphConfig, GraphRuntime, Node, NodeStatus, ReplanRequest, TaskGraph


async def test_cancel_stops_running_nodes_and_reports_what_finished() -> None:
    gate = Gate("wait")
    gate.release_event("first").set()
    graph = TaskGraph([
        Node(id="first", tool="wait", params={"key": "first"}),
        Node(id="slow1", tool="wait", params={"key": "s1"}, depends_on=["first"]),
        Node(id="slow2", tool="wait", params={"key": "s2"}, race_group="g"),
        Node(id="slow3", tool="wait", params={"key": "s3"}, race_group="g"),
        Node(id="later", tool="wait", params={"key": "later"}, depends_on=["slow1"]),
    ])
    rec = Recorder()
    rt = GraphRuntime(graph, {"wait": gate.tool()}, GraphConfig(), on_event=rec)
    run = asyncio.create_task(rt.run())
    for key in ("s1", "s2", "s3"):
        await gate.started_event(key).wait()
    rt.cancel()
    result = await run
    assert result.status == "cancelled"
    assert result.finished == ["first"]
    assert sorted(result.unfinished) == ["later", "slow1", "slow2", "slow3"]
    assert sorted(gate.cancelled) == ["s1", "s2", "s3"]  # the tools really were cancelled
    assert result.nodes["slow1"].error == "cancelled while running"
    assert result.nodes["later"].error == "cancelled" and "later" not in gate.calls
    assert sorted(e.id for e in rec.of("node_done") if e.status == "cancelled") == [  # type: ignore[attr-defined]
        "later", "slow1", "slow2", "slow3"]


async def test_cancelling_the_run_task_cleans_up_and_propagates() -> None:
    gate = Gate("wait")
    rt = GraphRuntime(TaskGraph([Node(id="n1", tool="wait", params={"key": "k"})]), {"wait": gate.tool()}, GraphConfig())
    run = asyncio.create_task(rt.run())
    await gate.started_event("k").wait()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert gate.cancelled == ["k"]
    assert rt.graph["n1"].status is NodeStatus.CANCELLED


async def test_cancel_before_run_runs_nothing() -> None:
    gate = Gate("wait")
    rt = GraphRuntime(TaskGraph([Node(id="n1", tool="wait")]), {"wait": gate.tool()}, GraphConfig())
    rt.cancel()
    result = await rt.run()
    assert result.status == "cancelled" and result.unfinished == ["n1"] and gate.calls == []


async def test_a_failure_triggers_a_replan_whose_nodes_run() -> None:
    def boom(args: dict[str, Any]) -> str:
        raise ValueError("no data")

    requests: list[ReplanRequest] = []

    async def replanner(request: ReplanRequest) -> Sequence[Node]:
        requests.append(request)
        if request.reason == "failure":
            return [Node(id="n9", tool="ok", params={}, depends_on=["n2"])]
        return []

    rec = Recorder()
    graph = TaskGraph([Node(id="n1", tool="boom"), Node(id="n2", tool="ok")])
    tools = {"boom": fn_tool("boom", boom), "ok": fn_tool("ok", lambda a: "fine")}
    result = await GraphRuntime(graph, tools, GraphConfig(max_replan=3), on_event=rec, replanner=replanner).run()
    assert [r.reason for r in requests] == ["failure", "drained"]
    assert requests[0].detail == "n1 failed: ValueError: no data" and requests[0].failed == ["n1"]
    assert result.nodes["n9"].status is NodeStatus.DONE and result.replans == 2
    (replan, _) = rec.of("replan")
    assert replan.added == ["n9"] and replan.used == 1 and replan.max == 3  # type: ignore[attr-defined]


async def test_replanning_is_bounded() -> None:
    def boom(args: dict[str, Any]) -> str:
        raise ValueError("still broken")

    calls = 0

    async def replanner(request: ReplanRequest) -> Sequence[Node]:
        nonlocal calls
        calls += 1
        return [Node(id=f"retry{calls}", tool="boom")]

    result = await GraphRuntime(TaskGraph([Node(id="n1", tool="boom")]), {"boom": fn_tool("boom", boom)},
                                GraphConfig(max_replan=2), replanner=replanner).run()
    assert calls == 2 and sorted(result.nodes) == ["n1", "retry1", "retry2"]
    assert result.status == "failed"


async def test_an_invalid_replan_is_rejected_and_nothing_is_added() -> None:
    async def replanner(request: ReplanRequest) -> Sequence[Node]:
        return [Node(id="n1", tool="ok"), Node(id="x", tool="ok", depends_on=["missing"])]

    rec = Recorder()
    result = await GraphRuntime(TaskGraph([Node(id="n1", tool="ok")]), {"ok": fn_tool("ok", lambda a: 1)},
                                GraphConfig(max_replan=1), on_event=rec, replanner=replanner).run()
    assert sorted(result.nodes) == ["n1"] and result.ok
    (error,) = rec.of("error")
    assert error.where == "replan" and "duplicate node id: n1" in error.message  # type: ignore[attr-defined]


async def test_the_graph_keeps_running_while_the_replanner_thinks() -> None:
    def boom(args: dict[str, Any]) -> str:
        raise ValueError("x")

    gate = Gate("wait")
    thinking = asyncio.Event()
    other_done = asyncio.Event()

    async def replanner(request: ReplanRequest) -> Sequence[Node]:
        if request.reason == "failure":
            thinking.set()
            await other_done.wait()  # only returns once another node finished meanwhile
            return [Node(id="fix", tool="ok")]
        return []

    async def ok(args: dict[str, Any]) -> str:
        other_done.set()
        return "ok"

    graph = TaskGraph([
        Node(id="bad", tool="boom"),
        Node(id="slow", tool="wait", params={"key": "s"}),
        Node(id="after", tool="ok", depends_on=["slow"]),
    ])
    tools = {"boom": fn_tool("boom", boom), "wait": gate.tool(), "ok": fn_tool("ok", ok)}
    run = asyncio.create_task(GraphRuntime(graph, tools, GraphConfig(max_replan=2), replanner=replanner).run())
    await thinking.wait()
    gate.release_event("s").set()
    result = await run
    assert result.nodes["after"].status is NodeStatus.DONE and result.nodes["fix"].status is NodeStatus.DONE
    assert result.finished.index("after") < result.finished.index("fix")


async def test_a_failing_replanner_is_reported_not_raised() -> None:
    async def replanner(request: ReplanRequest) -> Sequence[Node]:
        raise RuntimeError("planner model down")

    rec = Recorder()
    result = await GraphRuntime(TaskGraph([Node(id="n1", tool="ok")]), {"ok": fn_tool("ok", lambda a: 1)},
                                GraphConfig(max_replan=1), on_event=rec, replanner=replanner).run()
    assert result.ok
    assert [e.message for e in rec.of("error")] == ["replanning failed: RuntimeError: planner model down"]  # type: ignore[attr-defined]



async def test_a_replanner_that_declines_spends_no_replan_and_announces_nothing() -> None:
    def boom(args: dict[str, Any]) -> str:
        raise ValueError("no data")

    asked: list[str] = []

    async def replanner(request: ReplanRequest) -> Sequence[Node] | None:
        asked.append(request.reason)
        return None if len(asked) == 1 else [Node(id="fix", tool="ok")]

    rec = Recorder()
    tools = {"boom": fn_tool("boom", boom), "ok": fn_tool("ok", lambda a: "fine")}
    result = await GraphRuntime(TaskGraph([Node(id="n1", tool="boom")]), tools, GraphConfig(max_replan=1),
                                on_event=rec, replanner=replanner).run()
    assert asked == ["failure", "drained"], "the declined failure left the one replan for later"
    assert result.replans == 1 and result.nodes["fix"].status is NodeStatus.DONE
    (replan,) = rec.of("replan")
    assert replan.added == ["fix"] and replan.used == 1  # type: ignore[attr-defined]
