"""A bug inside a race's own bookkeeping (``Race.run`` raising) must not hang or kill the run: every
member of that race fails with the internal error, whatever depended on them is skipped, the rest of
the graph runs on, and the log names the race group for whoever reads it."""

from __future__ import annotations

import logging

import pytest
from graph_testkit import Recorder, fn_tool

from saber.graph import GraphConfig, GraphRuntime, Node, NodeStatus
from saber.graph.races import Race


async def test_a_race_that_crashes_fails_its_members_and_the_run_goes_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(self: Race) -> None:
        raise RuntimeError("race bookkeeping bug")

    monkeypatch.setattr(Race, "run", broken)
    tools = {"t": fn_tool("t", lambda a: "ok")}
    nodes = [
        Node(id="web", tool="t", race_group="search"),
        Node(id="kb", tool="t", race_group="search"),
        Node(id="use", tool="t", depends_on=["kb"]),
        Node(id="other", tool="t"),
    ]
    rec = Recorder()
    with caplog.at_level(logging.ERROR, logger="saber.graph.execute"):
        result = await GraphRuntime(nodes, tools, GraphConfig(), on_event=rec).run()
    for member in ("web", "kb"):
        assert result.nodes[member].status is NodeStatus.FAILED
        assert result.nodes[member].error == "internal error: RuntimeError('race bookkeeping bug')"
    assert result.nodes["use"].status is NodeStatus.SKIPPED
    assert result.nodes["other"].status is NodeStatus.DONE and result.nodes["other"].result == "ok"
    assert result.status == "failed"
    crashes = [r for r in caplog.records if r.name == "saber.graph.execute"]
    assert [r.getMessage() for r in crashes] == ["race group search crashed the runtime worker"]
    assert crashes[0].exc_info is not None and "race bookkeeping bug" in str(crashes[0].exc_info[1])
    done = {e.id: e.status for e in rec.of("node_done")}  # type: ignore[attr-defined]
    assert done["web"] == "failed" and done["kb"] == "failed"
