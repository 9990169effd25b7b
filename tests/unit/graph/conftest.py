"""Every run in the graph unit tests is checked for the runtime's end-of-run invariant."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from saber.graph import GraphRuntime, NodeStatus
from saber.graph.result import RunResult


@pytest.fixture(autouse=True)
def no_node_left_pending_or_running(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """After ``run()`` returns, no node is PENDING or RUNNING: every node finished, failed, was
    skipped or cancelled (a run that drained with held nodes must never look finished)."""
    original = GraphRuntime.run

    async def checked(self: GraphRuntime) -> RunResult:
        result = await original(self)
        stuck = {n.id: n.status.value for n in result.nodes.values()
                 if n.status in (NodeStatus.PENDING, NodeStatus.RUNNING)}
        assert not stuck, f"run() returned {result.status!r} with unfinished nodes: {stuck}"
        return result

    monkeypatch.setattr(GraphRuntime, "run", checked)
    yield
