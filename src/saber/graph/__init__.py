"""Task graphs: nodes, validation and the parallel runtime."""

from saber.graph.agents import Replanner, ReplanRequest, SubAgent, SubAgentTask
from saber.graph.checkpoint import (
    Checkpoint,
    CheckpointStore,
    PostgresCheckpointStore,
    SQLiteCheckpointStore,
    TaskClaimedError,
)
from saber.graph.config import GraphConfig
from saber.graph.node import Node, NodeStatus, NodeType
from saber.graph.result import RunResult
from saber.graph.runtime import GraphRuntime
from saber.graph.taskgraph import GraphError, TaskGraph

__all__ = [
    "Checkpoint", "CheckpointStore", "GraphConfig", "GraphError", "GraphRuntime", "Node", "NodeStatus", "NodeType",
    "PostgresCheckpointStore", "ReplanRequest", "Replanner", "RunResult", "SQLiteCheckpointStore", "SubAgent",
    "SubAgentTask", "TaskClaimedError", "TaskGraph",
]
