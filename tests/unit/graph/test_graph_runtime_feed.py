"""GraphRuntime.open_feed / add_nodes / reconcile / close_feed: nodes joining a running graph."""

from __future__ import annotations

import asyncio

import pytest
from graph_testkit import Gate, Recorder, fn_tool, until

from saber.events import Error, NodeAdded, RaceWon
from saber.graph import GraphRuntime, Node, NodeStatus
from saber.tools import Tool, ToolError


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
    n1_done = events.seen("node_done", id="n1")
    runtime = GraphRuntime([], tools, on_event=events)
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


async def test_a_race_group_starts_with_its_first_member_and_a_later_one_joins_while_undecided() -> None:
    gates, tools = gated("fast", "slow")
    events = Recorder()
    runtime = GraphRuntime([], tools, on_event=events)
    runtime.open_feed()
    run = asyncio.create_task(runtime.run())
    runtime.add_nodes([Node(id="r1", tool="slow", params={"key": "1"}, race_group="g")])
    await gates["slow"].started_event("1").wait()  # started alone: the group may still grow
    runtime.add_nodes([Node(id="r2", tool="fast", params={"key": "2"}, race_group="g"),
                       Node(id="n3", tool="fast", params={"key": "3"}, depends_on=["r1"])])
    await gates["fast"].started_event("2").wait()  # joined the race under way
    gates["fast"].release_event("2").set()
    await gates["fast"].started_event("3").wait()  # r1 lost: n3 receives the winner's result
    gates["fast"].release_event("3").set()
    runtime.close_feed()
    result = await run
    won = [e for e in events.events if isinstance(e, RaceWon)]
    assert len(won) == 1 and won[0].winner == "r2" and won[0].losers == ["r1"]
    assert result.nodes["r1"].status is NodeStatus.SKIPPED and "lost race 'g' to r2" in (result.nodes["r1"].error or "")
    assert gates["slow"].cancelled == ["1"] and result.nodes["n3"].status is NodeStatus.DONE


async def test_a_member_written_after_its_race_was_won_loses_without_running() -> None:
    gates, tools = gated("fast", "slow")
    events = Recorder()
    won = events.seen("race_won")
    runtime = GraphRuntime([], tools, on_event=events)
    runtime.open_feed()
    run = asyncio.create_task(runtime.run())
    runtime.add_nodes([Node(id="r1", tool="fast", params={"key": "1"}, race_group="g")])
    gates["fast"].release_event("1").set()
    await won.wait()  # the race's outcome is applied
    runtime.add_nodes([Node(id="r2", tool="slow", params={"key": "2"}, race_group="g"),
                       Node(id="n3", tool="fast", params={"key": "3"}, depends_on=["r2"])])
    gates["fast"].release_event("3").set()
    runtime.close_feed()
    result = await run
    assert gates["slow"].calls == []
    assert result.nodes["r2"].status is NodeStatus.SKIPPED and "lost race 'g' to r1" in (result.nodes["r2"].error or "")
    assert result.nodes["n3"].status is NodeStatus.DONE and gates["fast"].calls == ["1", "3"]
    assert result.nodes["n3"].result == "ok:3" and result.status == "done"


async def test_a_member_written_after_every_racer_failed_starts_a_race_of_its_own() -> None:
    gates, tools = gated("good")

    def broken(args: dict[str, object]) -> str:
        raise ToolError("backend down", retryable=False)

    tools["bad"] = fn_tool("bad", broken, {"type": "object", "properties": {"key": {"type": "string"}}})
    events = Recorder()
    failed = events.seen("node_done", id="r1")
    runtime = GraphRuntime([], tools, on_event=events)
    runtime.open_feed()
    run = asyncio.create_task(runtime.run())
    runtime.add_nodes([Node(id="r1", tool="bad", params={"key": "1"}, race_group="g")])
    await failed.wait()
    runtime.add_nodes([Node(id="r2", tool="good", params={"key": "2"}, race_group="g")])
    await gates["good"].started_event("2").wait()
    gates["good"].release_event("2").set()
    runtime.close_feed()
    result = await run
    assert result.nodes["r1"].status is NodeStatus.FAILED and result.nodes["r2"].status is NodeStatus.DONE
    assert [e.winner for e in events.events if isinstance(e, RaceWon)] == ["r2"]


async def test_a_whole_plan_still_holds_a_race_until_every_member_is_ready() -> None:
    gates, tools = gated("a", "fast", "slow")
    runtime = GraphRuntime([Node(id="n0", tool="a", params={"key": "0"}),
                            Node(id="r1", tool="fast", params={"key": "1"}, race_group="g"),
                            Node(id="r2", tool="slow", params={"key": "2"}, race_group="g", depends_on=["n0"])], tools)
    run = asyncio.create_task(runtime.run())
    await gates["a"].started_event("0").wait()
    await asyncio.sleep(0.01)
    assert gates["fast"].calls == []  # not streamed: the race starts with every member
    gates["a"].release_event("0").set()
    await gates["slow"].started_event("2").wait()
    await gates["fast"].started_event("1").wait()
    gates["fast"].release_event("1").set()
    result = await run
    assert result.nodes["r1"].status is NodeStatus.DONE and gates["slow"].cancelled == ["2"]


async def test_a_race_group_whose_members_arrive_together_runs_once_as_one_race(
        caplog: pytest.LogCaptureFixture) -> None:
    gates, tools = gated("fast", "slow")
    events = Recorder()
    runtime = GraphRuntime([], tools, on_event=events)
    runtime.open_feed()
    run = asyncio.create_task(runtime.run())
    runtime.add_nodes([Node(id="r1", tool="fast", params={"key": "1"}, race_group="g"),
                       Node(id="r2", tool="slow", params={"key": "2"}, race_group="g")])  # one chunk of a compact plan
    await gates["slow"].started_event("2").wait()
    gates["fast"].release_event("1").set()
    runtime.close_feed()
    result = await run
    assert result.status == "done" and result.nodes["r1"].status is NodeStatus.DONE
    assert result.nodes["r2"].status is NodeStatus.SKIPPED and gates["slow"].cancelled == ["2"]
    assert sorted(e.node["id"] for e in events.events if isinstance(e, NodeAdded)) == ["r1", "r2"]
    assert not [e for e in events.events if isinstance(e, Error)]
    assert not [r for r in caplog.records if r.levelname == "ERROR"]  # the feed applied them without a bug


async def test_feeding_a_runtime_without_open_feed_is_refused() -> None:
    runtime = GraphRuntime([Node(id="n1", tool="a")], {"a": fn_tool("a", lambda args: "ok")})
    with pytest.raises(RuntimeError, match="open_feed"):
        runtime.add_nodes([Node(id="n2", tool="a")])
    await runtime.run()
    with pytest.raises(RuntimeError, match="before run"):
        runtime.open_feed()


async def test_a_failure_while_the_plan_streams_is_replanned_once_the_plan_is_complete() -> None:
    from collections.abc import Sequence

    from saber.graph import GraphConfig, ReplanRequest

    asked: list[list[str]] = []

    async def replanner(request: ReplanRequest) -> Sequence[Node]:
        asked.append(sorted(n.id for n in request.nodes))
        return [Node(id="n3", tool="ok")] if len(asked) == 1 else []

    async def boom(args: dict[str, object]) -> str:
        raise ToolError("down", retryable=False)

    events = Recorder()
    runtime = GraphRuntime([], {"boom": fn_tool("boom", boom), "ok": fn_tool("ok", lambda a: "fine")},
                           GraphConfig(max_replan=2), on_event=events, replanner=replanner)
    failed = events.seen("node_done", id="n1", status="failed")
    runtime.open_feed()
    run = asyncio.create_task(runtime.run())
    runtime.add_nodes([Node(id="n1", tool="boom")])
    await until(failed, run)
    for _ in range(5):  # a replan started with the failure would have reached the replanner by now
        await asyncio.sleep(0)
    assert asked == [], "no replan while the planner may still write n2, n3..."
    runtime.add_nodes([Node(id="n2", tool="ok")])  # the rest of the plan: its ids are its own
    runtime.close_feed()
    result = await run
    assert asked[0] == ["n1", "n2"]
    assert {n: result.nodes[n].status for n in ("n1", "n2", "n3")} == {
        "n1": NodeStatus.FAILED, "n2": NodeStatus.DONE, "n3": NodeStatus.DONE}
    assert not [e for e in events.events if isinstance(e, Error)]


async def test_a_streamed_race_group_whose_member_waits_on_another_is_rejected_and_the_plan_goes_on() -> None:
    events = Recorder()
    runtime = GraphRuntime([], {"t": fn_tool("t", lambda args: "ok")}, on_event=events)
    runtime.open_feed()
    run = asyncio.create_task(runtime.run())
    runtime.add_nodes([Node(id="a", tool="t", race_group="g"), Node(id="b", tool="t", race_group="g", depends_on=["a"])])
    runtime.add_nodes([Node(id="c", tool="t")])
    runtime.close_feed()
    result = await run
    assert sorted(result.nodes) == ["c"] and result.nodes["c"].status is NodeStatus.DONE
    assert [e.message for e in events.of("error")] == [  # type: ignore[attr-defined]
        "streamed node(s) a, b rejected: race group 'g': b depends on a of the same group"]
