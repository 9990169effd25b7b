"""Running nodes (``saber.graph.execute``) where mutation testing (``python bench/mutation.py
graph-execute``) found it unchecked: a race whose bookkeeping crashed leaves its group free for
a member written later, a big result from an async tool cut to the limit, a sync callable that hands back a
coroutine."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from graph_testkit import Recorder, fn_tool, until

from saber.graph import GraphConfig, GraphRuntime, Node, NodeStatus
from saber.graph.races import Race

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
