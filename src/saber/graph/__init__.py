"""Task graphs: nodes, validation and the parallel runtime."""

from typing import TYPE_CHECKING, Any

from saber.graph.agents import Replanner, ReplanRequest, SubAgent, SubAgentTask
from saber.graph.checkpoint import Checkpoint, CheckpointStore, SQLiteCheckpointStore, TaskClaimedError
from saber.graph.config import GraphConfig
from saber.graph.node import Node, NodeStatus, NodeType
from saber.graph.result import RunResult
from saber.graph.runtime import GraphRuntime
from saber.graph.taskgraph import GraphError, TaskGraph

if TYPE_CHECKING:
    from saber.graph.checkpoint.postgres import PostgresCheckpointStore

__all__ = [
    "Checkpoint", "CheckpointStore", "GraphConfig", "GraphError", "GraphRuntime", "Node", "NodeStatus", "NodeType",
    "PostgresCheckpointStore", "ReplanRequest", "Replanner", "RunResult", "SQLiteCheckpointStore", "SubAgent",
    "SubAgentTask", "TaskClaimedError", "TaskGraph",
]


def __getattr__(name: str) -> Any:
    """``PostgresCheckpointStore`` needs the ``postgres`` extra: imported on first use."""
    if name == "PostgresCheckpointStore":
        from saber.graph.checkpoint.postgres import PostgresCheckpointStore

        return PostgresCheckpointStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
