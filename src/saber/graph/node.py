"""``Node``: one step of a task graph (a tool call or a sub-agent), and its run-time state."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Literal


class NodeStatus(enum.StrEnum):
    """Where a node is: pending, running, done, failed, skipped (a dependency failed, or it lost
    a race) or cancelled."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self not in (NodeStatus.PENDING, NodeStatus.RUNNING)


NodeType = Literal["tool", "sub_agent"]


@dataclass(kw_only=True)
class Node:
    """One step of a task graph: a tool call (``tool``, ``params``) or a sub-agent (``agent``,
    ``goal``), the ids it ``depends_on`` and an optional ``race_group``. ``params`` may hold
    ``{{n1.field}}`` placeholders, filled from earlier nodes' results when the node runs. The runtime
    sets ``status``, ``result``, ``error``, ``attempts`` and ``duration_ms``."""

    id: str
    type: NodeType = "tool"
    tool: str | None = None
    agent: str | None = None
    goal: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    depends_on: list[str] = field(default_factory=list)
    race_group: str | None = None
    # run-time state
    status: NodeStatus = NodeStatus.PENDING
    result: Any = None
    error: str | None = None
    attempts: int = 0
    duration_ms: float = 0.0

    def __post_init__(self) -> None:
        if self.type == "tool" and not self.tool and self.agent:
            self.type = "sub_agent"
        if self.race_group == "":
            self.race_group = None

    @property
    def target(self) -> str:
        """The tool or agent this node calls."""
        return (self.agent if self.type == "sub_agent" else self.tool) or ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "type": self.type, "tool": self.tool, "agent": self.agent, "goal": self.goal,
            "params": self.params, "depends_on": list(self.depends_on), "race_group": self.race_group,
            "status": self.status.value, "result": self.result, "error": self.error,
            "attempts": self.attempts, "duration_ms": self.duration_ms,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Node:
        return cls(
            id=data["id"], type=data.get("type", "tool"), tool=data.get("tool"), agent=data.get("agent"),
            goal=data.get("goal", ""), params=dict(data.get("params") or {}),
            depends_on=list(data.get("depends_on") or []), race_group=data.get("race_group"),
            status=NodeStatus(data.get("status", "pending")), result=data.get("result"),
            error=data.get("error"), attempts=int(data.get("attempts", 0)),
            duration_ms=float(data.get("duration_ms", 0.0)),
        )
