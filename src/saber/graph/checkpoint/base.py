"""The checkpoint store interface: a task's graph state, saved as it runs, loadable after a crash."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from saber.graph.node import Node

TaskStatus = Literal["running", "done", "failed", "cancelled"]


@dataclass(frozen=True, kw_only=True)
class Checkpoint:
    """A task as last saved."""

    task_id: str
    status: TaskStatus
    nodes: list[Node]
    """In graph order, with status, result, error and attempts as of the last save."""
    config: dict[str, Any] = field(default_factory=dict)
    replans: int = 0
    meta: dict[str, Any] = field(default_factory=dict)


class CheckpointStore(ABC):
    """Where task state lives. The runtime calls ``save_graph`` when a run starts (and after a
    replan adds nodes), ``save_nodes`` with every batch of finished nodes *before* their
    dependents start, and ``set_status`` at the end. Each call is durable when it returns."""

    @abstractmethod
    async def save_graph(
        self, task_id: str, nodes: Sequence[Node], *, config: Mapping[str, Any], status: TaskStatus,
        replans: int = 0, meta: Mapping[str, Any] | None = None,
    ) -> None:
        """Write the whole task (replacing any earlier state of it)."""

    @abstractmethod
    async def save_nodes(self, task_id: str, nodes: Sequence[Node], *, replans: int | None = None) -> None:
        """Update the state of these nodes (already part of the saved graph)."""

    @abstractmethod
    async def set_status(self, task_id: str, status: TaskStatus) -> None: ...

    @abstractmethod
    async def load(self, task_id: str) -> Checkpoint | None:
        """The task as last saved, or None if the store has never seen it."""

    @abstractmethod
    async def list_tasks(self, *, status: TaskStatus | None = None) -> list[str]:
        """Task ids, oldest first; e.g. ``status="running"`` finds tasks to resume after a restart."""

    @abstractmethod
    async def delete(self, task_id: str) -> None: ...

    @abstractmethod
    async def close(self) -> None: ...

    async def __aenter__(self) -> CheckpointStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


# -- helpers shared by the implementations ------------------------------------------------------

def node_spec(node: Node) -> str:
    """The part of a node that does not change while it runs, as JSON."""
    return _dumps({
        "type": node.type, "tool": node.tool, "agent": node.agent, "goal": node.goal,
        "params": node.params, "depends_on": node.depends_on, "race_group": node.race_group,
    })


def node_state(node: Node) -> tuple[str, str, str | None, int, float]:
    """(status, result JSON, error, attempts, duration_ms)."""
    return node.status.value, _dumps(node.result), node.error, node.attempts, node.duration_ms


def node_from_row(node_id: str, spec: str, status: str, result: str, error: str | None,
                  attempts: int, duration_ms: float) -> Node:
    data = json.loads(spec)
    data.update(id=node_id, status=status, result=json.loads(result), error=error,
                attempts=attempts, duration_ms=duration_ms)
    return Node.from_dict(data)


def _dumps(value: Any) -> str:
    # Results that JSON cannot hold are stored as their text: a resumed task sees that text.
    return json.dumps(value, ensure_ascii=False, default=str)
