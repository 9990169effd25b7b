"""Task graphs: nodes, validation and the parallel runtime.

Names are imported on first use (as in ``saber``). ``GraphConfig`` lives with the settings
(``saber.config.graph``, the graph section ``Settings`` takes its defaults from), so reading
settings never loads the runtime; it is exported here as part of the graph's API.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from saber.config.graph import GraphConfig
    from saber.graph.agents import Replanner, ReplanRequest, SubAgent, SubAgentTask
    from saber.graph.checkpoint import Checkpoint, CheckpointStore, SQLiteCheckpointStore, TaskClaimedError
    from saber.graph.checkpoint.postgres import PostgresCheckpointStore
    from saber.graph.node import Node, NodeStatus, NodeType
    from saber.graph.result import RunResult
    from saber.graph.runtime import GraphRuntime
    from saber.graph.taskgraph import GraphError, TaskGraph

__all__ = [
    "Checkpoint", "CheckpointStore", "GraphConfig", "GraphError", "GraphRuntime", "Node", "NodeStatus", "NodeType",
    "PostgresCheckpointStore", "ReplanRequest", "Replanner", "RunResult", "SQLiteCheckpointStore", "SubAgent",
    "SubAgentTask", "TaskClaimedError", "TaskGraph",
]

_HOMES = {
    "Replanner": "saber.graph.agents", "ReplanRequest": "saber.graph.agents", "SubAgent": "saber.graph.agents",
    "SubAgentTask": "saber.graph.agents",
    "Checkpoint": "saber.graph.checkpoint", "CheckpointStore": "saber.graph.checkpoint",
    "SQLiteCheckpointStore": "saber.graph.checkpoint", "TaskClaimedError": "saber.graph.checkpoint",
    "PostgresCheckpointStore": "saber.graph.checkpoint.postgres",  # needs the ``postgres`` extra
    "GraphConfig": "saber.config.graph",
    "Node": "saber.graph.node", "NodeStatus": "saber.graph.node", "NodeType": "saber.graph.node",
    "RunResult": "saber.graph.result",
    "GraphRuntime": "saber.graph.runtime",
    "GraphError": "saber.graph.taskgraph", "TaskGraph": "saber.graph.taskgraph",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
