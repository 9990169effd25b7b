"""Checkpoint stores: where a task's graph state is saved after every node.

``PostgresCheckpointStore`` is imported on first use: psycopg comes with the ``postgres`` extra,
and the embedded SQLite store must work without it.
"""

from typing import TYPE_CHECKING, Any

from saber.graph.checkpoint.base import Checkpoint, CheckpointStore, TaskClaimedError, TaskStatus
from saber.graph.checkpoint.sqlite import SQLiteCheckpointStore

if TYPE_CHECKING:
    from saber.graph.checkpoint.postgres import PostgresCheckpointStore

__all__ = [
    "Checkpoint", "CheckpointStore", "PostgresCheckpointStore", "SQLiteCheckpointStore", "TaskClaimedError",
    "TaskStatus",
]


def __getattr__(name: str) -> Any:
    if name == "PostgresCheckpointStore":
        from saber.graph.checkpoint.postgres import PostgresCheckpointStore

        return PostgresCheckpointStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
