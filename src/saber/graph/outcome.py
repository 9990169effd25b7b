"""How a node's execution ended, as reported by its worker to the scheduler."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from saber.graph.node import NodeStatus


@dataclass(frozen=True, kw_only=True, slots=True)
class NodeOutcome:
    node_id: str
    status: NodeStatus
    result: Any = None
    error: str | None = None
    duration_ms: float = 0.0


@dataclass(frozen=True, kw_only=True, slots=True)
class RaceOutcome:
    """A race group's end: the winner (if any) first, then every other member."""

    group: str
    winner: str | None
    outcomes: list[NodeOutcome] = field(default_factory=list)
