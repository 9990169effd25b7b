"""GraphRuntime.open_feed / add_nodes / reconcile / close_feed: nodes joining a running graph."""

from __future__ import annotations

import asyncio

import pytest
from graph_testkit import Gate, Recorder, fn_tool

from saber.events import Error, Event, NodeAdded, NodeDone, RaceWon
from saber.graph import GraphRuntime, Node, NodeStatus
from saber.tools import Tool


def gated(*names: str) -> tuple[dict[str, Gate], dict[str, Tool]]:
    gates = {n: Gate(n) for n in names}
    return gates, {n: g.tool() for n, g in gates.items()}


async def test_a_node_starts_at_once_and_a_later_one_waits_for_a_dependency_not_yet_written() -> None:
    gates, tools = gated("a", "b")
    events = Recorder()
    runtime = GraphRuntime([], tools, on_event=events)
    runtime.open_feed()
    run = asyncio.create_task(runtime.run())
    runtime.add_nodes([Node(id="n1", tool="a", params={"key": "1"})])
    await gates["a"].started_event("1").wait()  # started while the plan is still open
    runtime.add_nodes([Node(id="n3", tool="b", params={"key": "3"}, depends_on=["n2"])])
    await asyncio.sleep(0.01)
    assert "n3" not in runtime.graph.nodes and gates["b"].calls == []  # n2 is not written yet
    runtime.add_nodes([Node(id="n2", tool="a", params={"key": "2"})])
    gates["a"].release_event("1").set()
    gates["a"].release_event("2").set()
    await gates["b"].started_event("3").wait()
    gates["b"].release_event("3").set()
    runtime.close_feed()
    result = await run
    assert result.status == "done" and result.nodes["n3"].status is NodeStatus.DONE
    assert [e.node["id"] for e in events.events if isinstance(e, NodeAdded)] == ["n1", "n2", "n3"]
    assert events.index("node_done", id="n2") < events.index("node_start", id="n3")


async def test_the_run_stays_open_until_the_feed_closes() -> None:
    gates, tools = gated("a")
    runtime = GraphRuntime([], tools)
    runtime.open_feed()
    run = asyncio.create_task(runtime.run())
    runtime.add_nodes([Node(id="n1", tool="a", params={"key": "1"})])
    gates["a"].release_event("1").set()
    await asyncio.sleep(0.05)
    assert not run.done()  # drained, but more nodes may come
    runtime.add_nodes([Node(id="n2", tool="a", params={"key": "2"})])
    gates["a"].release_event("2").set()
    runtime.close_feed()
    result = await run
    assert result.finished == ["n1", "n2"]


async def test_a_node_waiting_on_one_never_written_is_reported_and_not_run() -> None:
    gates, tools = gated("a")
    events = Recorder()
    runtime = GraphRuntime([], tools, on_event=events)
    runtime.open_feed()
    run = asyncio.create_task(runtime.run())
    runtime.add_nodes([Node(id="n1", tool="a", params={"key": "1"}, depends_on=["ghost"])])
    runtime.close_feed()
    result = await run
    assert gates["a"].calls == [] and "n1" not in result.nodes
    errors = [e for e in events.events if isinstance(e, Error)]
    assert errors and "n1 not run" in errors[0].message and "ghost" in errors[0].message


async def test_reconcile_skips_a_dropped_pending_node_and_reports_a_finished_one_the_plan_changed() -> None:
    gates, tools = gated("a")
    events = Recorder()
    n1_done = asyncio.Event()

    def record(event: Event) -> None:
        events(event)
        if isinstance(event, NodeDone) and event.id == "n1":
            n1_done.set()

    runtime = GraphRuntime([], tools, on_event=record)
    runtime.open_feed()
    run = asyncio.create_task(runtime.run())
    runtime.add_nodes([Node(id="n1", tool="a", params={"key": "1"}), Node(id="n0", tool="a", params={"key": "0"}),
                       Node(id="n2", tool="a", params={"key": "2"}, depends_on=["n0"])])
    gates["a"].release_event("1").set()
    await n1_done.wait()
    runtime.reconcile({"n1": Node(id="n1", tool="a", params={"key": "other"})}, ["n2"])
    runtime.close_feed()
    await asyncio.sleep(0.01)
    gates["a"].release_event("0").set()
    result = await run
    assert result.nodes["n1"].status is NodeStatus.DONE and result.nodes["n2"].status is NodeStatus.SKIPPED
    assert result.nodes["n2"].error == "removed by the final plan" and sorted(gates["a"].calls) == ["0", "1"]
    errors = [e.message for e in events.events if isinstance(e, Error)]
    assert any("n1 was already done before the final plan changed it" in m for m in errors)


async def test_a_race_group_starts_with_every_member_once_it_is_complete() -> None:
    gates, tools = gated("fast", "slow")
    events = Recorder()
    runtime = GraphRuntime([], tools, on_event=events)
    runtime.open_feed()
    run = asyncio.create_task(runtime.run())
    runtime.add_nodes([Node(id="r1", tool="fast", params={"key": "1"}, race_group="g")])
    await asyncio.sleep(0.01)
    assert gates["fast"].calls == []  # the group may still grow
    runtime.add_nodes([Node(id="r2", tool="slow", params={"key": "2"}, race_group="g"),
                       Node(id="n3", tool="fast", params={"key": "3"}, depends_on=["r1"])])
    await gates["fast"].started_event("1").wait()
    await gates["slow"].started_event("2").wait()
    gates["fast"].release_event("1").set()
    gates["fast"].release_event("3").set()
    runtime.close_feed()
    result = await run
    won = [e for e in events.events if isinstance(e, RaceWon)]
    assert won and won[0].winner == "r1" and result.nodes["r2"].status is NodeStatus.SKIPPED
    assert gates["slow"].cancelled == ["2"]


async def test_feeding_a_runtime_without_open_feed_is_refused() -> None:
    runtime = GraphRuntime([Node(id="n1", tool="a")], {"a": fn_tool("a", lambda args: "ok")})
    with pytest.raises(RuntimeError, match="open_feed"):
        runtime.add_nodes([Node(id="n2", tool="a")])
    await runtime.run()
    with pytest.raises(RuntimeError, match="before run"):
        runtime.open_feed()
