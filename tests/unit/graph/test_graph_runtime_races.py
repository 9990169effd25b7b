"""Race groups: first success wins, losers skipped (never failures), timeouts, hedging."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from graph_testkit import Gate, Recorder, fn_tool

from saber.graph import GraphConfig, GraphRuntime, Node, NodeStatus, ReplanRequest, TaskGraph
from saber.tools import ToolError


def race_graph(tool: str = "wait") -> TaskGraph:
    return TaskGraph([
        Node(id="web", tool=tool, params={"key": "web"}, race_group="search"),
        Node(id="kb", tool=tool, params={"key": "kb"}, race_group="search"),
        Node(id="use", tool="echo", params={"x": "$kb"}, depends_on=["kb"]),
    ])


def echo_tool() -> Any:
    return fn_tool("echo", lambda a: a["x"], {"type": "object", "properties": {"x": {}}})


async def test_first_success_wins_losers_are_cancelled_and_skipped_not_failed() -> None:
    gate = Gate("wait")
    rec = Recorder()
    replans: list[ReplanRequest] = []

    async def replanner(request: ReplanRequest) -> Sequence[Node]:
        replans.append(request)
        return []

    rt = GraphRuntime(race_graph(), {"wait": gate.tool(), "echo": echo_tool()}, GraphConfig(max_replan=2), on_event=rec,
                      replanner=replanner)
    run = asyncio.create_task(rt.run())
    await gate.started_event("web").wait()
    await gate.started_event("kb").wait()
    gate.release_event("web").set()
    result = await run
    assert result.status == "done"
    assert result.nodes["web"].status is NodeStatus.DONE
    assert result.nodes["kb"].status is NodeStatus.SKIPPED
    assert result.nodes["kb"].error == "lost race 'search' to web"
    assert gate.cancelled == ["kb"]
    assert result.errors == {}
    # the dependent of the loser runs, with the winner's result
    assert result.nodes["use"].result == "ok:web"
    # no replan for a failure: only the one call when the graph drained
    assert [r.reason for r in replans] == ["drained"] and replans[0].failed == []
    won = rec.index("race_won", race_group="search", winner="web")
    assert rec.index("node_done", id="web") < won < rec.index("node_done", id="kb", status="skipped")


async def test_a_racer_that_failed_before_the_winner_is_a_loser_too() -> None:
    calls: list[str] = []

    async def source(args: dict[str, Any]) -> str:
        calls.append(args["key"])
        if args["key"] == "web":
            raise ToolError("403 from search", retryable=False)
        await asyncio.sleep(0)
        return "kb says"

    tools = {"src": fn_tool("src", source, {"type": "object", "properties": {"key": {"type": "string"}}}), "echo": echo_tool()}
    result = await GraphRuntime(race_graph("src"), tools, GraphConfig()).run()
    assert result.status == "done"
    assert result.nodes["kb"].status is NodeStatus.DONE
    assert result.nodes["web"].status is NodeStatus.SKIPPED
    assert result.nodes["web"].error == "lost race 'search' to kb (this racer had failed: 403 from search)"


async def test_when_every_racer_fails_each_keeps_its_own_error() -> None:
    async def source(args: dict[str, Any]) -> str:
        raise ToolError(f"{args['key']} is down", retryable=False)

    tools = {"src": fn_tool("src", source, {"type": "object", "properties": {"key": {"type": "string"}}}), "echo": echo_tool()}
    result = await GraphRuntime(race_graph("src"), tools, GraphConfig()).run()
    assert result.status == "failed"
    assert result.errors == {"web": "web is down", "kb": "kb is down"}
    assert result.nodes["use"].status is NodeStatus.SKIPPED


async def test_the_race_group_times_out_as_a_whole() -> None:
    gate = Gate("wait")
    config = GraphConfig(race_timeout=0.03, step_timeout=60)
    result = await GraphRuntime(race_graph(), {"wait": gate.tool(), "echo": echo_tool()}, config).run()
    assert {result.nodes[n].error for n in ("web", "kb")} == {"race group 'search' timed out after 30 ms"}
    assert {result.nodes[n].status for n in ("web", "kb")} == {NodeStatus.FAILED}
    assert sorted(gate.cancelled) == ["kb", "web"]


async def test_racing_disabled_runs_members_as_plain_nodes() -> None:
    gate = Gate("wait")
    rec = Recorder()
    rt = GraphRuntime(race_graph(), {"wait": gate.tool(), "echo": echo_tool()}, GraphConfig(enable_racing=False),
                      on_event=rec)
    run = asyncio.create_task(rt.run())
    await gate.started_event("web").wait()
    gate.release_event("web").set()
    gate.release_event("kb").set()
    result = await run
    assert result.nodes["web"].status is result.nodes["kb"].status is NodeStatus.DONE
    assert rec.of("race_won") == [] and gate.cancelled == []


async def test_hedging_starts_the_next_racer_only_when_the_first_is_slow() -> None:
    gate = Gate("wait")
    gate.release_event("web").set()  # the first racer answers at once
    config = GraphConfig(hedge=600)  # (longer than the test timeout: a wrong wait would show)
    result = await GraphRuntime(race_graph(), {"wait": gate.tool(), "echo": echo_tool()}, config).run()
    assert gate.calls == ["web"]  # the hedge never fired
    assert result.nodes["kb"].status is NodeStatus.SKIPPED and result.nodes["kb"].attempts == 0

    slow = Gate("wait")
    slow.release_event("kb").set()  # the first racer hangs; the hedge starts the second, which wins
    result = await GraphRuntime(race_graph(), {"wait": slow.tool(), "echo": echo_tool()}, GraphConfig(hedge=0.005)).run()
    assert slow.calls == ["web", "kb"] and slow.cancelled == ["web"]
    assert result.nodes["kb"].status is NodeStatus.DONE and result.nodes["web"].status is NodeStatus.SKIPPED


async def test_hedging_starts_the_next_racer_at_once_when_the_first_fails() -> None:
    async def source(args: dict[str, Any]) -> str:
        if args["key"] == "web":
            raise ToolError("web down", retryable=False)
        return "kb"

    tools = {"src": fn_tool("src", source, {"type": "object", "properties": {"key": {"type": "string"}}}), "echo": echo_tool()}
    result = await GraphRuntime(race_graph("src"), tools, GraphConfig(hedge=600)).run()
    assert result.nodes["kb"].status is NodeStatus.DONE


async def test_a_race_group_starts_together_once_every_member_is_ready() -> None:
    gate = Gate("wait")
    graph = TaskGraph([
        Node(id="pre", tool="wait", params={"key": "pre"}),
        Node(id="a", tool="wait", params={"key": "a"}, race_group="g"),
        Node(id="b", tool="wait", params={"key": "b"}, race_group="g", depends_on=["pre"]),
    ])
    run = asyncio.create_task(GraphRuntime(graph, {"wait": gate.tool()}, GraphConfig()).run())
    await gate.started_event("pre").wait()
    for _ in range(10):
        await asyncio.sleep(0)
    assert gate.calls == ["pre"]  # "a" is held for its group
    gate.release_event("pre").set()
    await gate.started_event("a").wait()
    await gate.started_event("b").wait()
    gate.release_event("b").set()
    result = await run
    assert result.nodes["b"].status is NodeStatus.DONE and result.nodes["a"].status is NodeStatus.SKIPPED
