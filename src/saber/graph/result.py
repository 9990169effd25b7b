"""What a run hands back: every node's final state and what finished or did not."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from saber.graph.node import Node, NodeStatus

RunStatus = Literal["done", "failed", "cancelled"]


@dataclass(frozen=True, kw_only=True)
class RunResult:
    """What ``GraphRuntime.run`` returns: the run's status, every node as it ended, the order
    nodes finished in, and what was left unfinished when it was cancelled."""

    task_id: str
    status: RunStatus
    """done: every node succeeded (race losers aside); failed: some node failed or was skipped
    because of a failure; cancelled: the run was cancelled and ``unfinished`` says what was cut."""
    nodes: Mapping[str, Node]
    finished: list[str] = field(default_factory=list)
    """Nodes that reached done, failed or skipped, in the order they finished."""
    unfinished: list[str] = field(default_factory=list)
    """Nodes cancelled before finishing (running ones cut off and pending ones never started)."""
    replans: int = 0
    duration_ms: float = 0.0
    stopped: str | None = None
    """Why the run stopped on its own before finishing (status ``cancelled``): a checkpoint write
    failed, or the scheduler hit a bug. None when it finished or the caller cancelled it."""

    @property
    def ok(self) -> bool:
        return self.status == "done"

    @property
    def results(self) -> dict[str, Any]:
        """Results of the nodes that succeeded, by id."""
        return {n.id: n.result for n in self.nodes.values() if n.status is NodeStatus.DONE}

    @property
    def errors(self) -> dict[str, str]:
        """Errors of failed nodes, by id."""
        return {n.id: n.error or "" for n in self.nodes.values() if n.status is NodeStatus.FAILED}
