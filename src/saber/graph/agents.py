"""The contract between the graph runtime and sub-agents, and the replanning hook."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from saber.graph.node import Node


@dataclass(frozen=True, kw_only=True)
class SubAgentTask:
    """What a sub-agent node hands its agent."""

    goal: str
    params: Mapping[str, Any] = field(default_factory=dict)
    """The node's params, placeholders already replaced by upstream results."""
    upstream: Mapping[str, Any] = field(default_factory=dict)
    """Results of the node's dependencies keyed ``"<node id>:<tool or agent>"``, e.g.
    ``{"n1:research_agent": ...}``; a failed dependency (``on_failure="continue"``) appears as
    ``{"error": ..., "status": "failed"}``."""
    node_id: str
    agent: str
    task_id: str
    attempt: int = 1


@runtime_checkable
class SubAgent(Protocol):
    """What a ``sub_agent`` node runs: ``await run(task)`` with the node's goal and inputs; what it
    returns is the node's result."""

    async def run(self, task: SubAgentTask) -> Any: ...


@dataclass(frozen=True, kw_only=True)
class ReplanRequest:
    """Why the runtime asks for more nodes, and the graph as it stands (read-only copies)."""

    reason: Literal["failure", "drained"]
    detail: str
    """E.g. ``"n2 failed: timed out after 5 s"`` or ``"all nodes finished"``."""
    nodes: Sequence[Node]
    failed: Sequence[str]
    used: int
    """Replans used before this one (this call is number used + 1)."""
    max: int


Replanner = Callable[[ReplanRequest], Awaitable[Sequence[Node] | None]]
"""Returns nodes to add (possibly none). They are validated with the graph before they run.
None declines the request (nothing to replan, no model asked): it spends no replan and emits no
``replan`` event."""
