"""Checkpoint stores: where a task's graph state is saved after every node."""

from saber.graph.checkpoint.base import Checkpoint, CheckpointStore, TaskClaimedError, TaskStatus
from saber.graph.checkpoint.postgres import PostgresCheckpointStore
from saber.graph.checkpoint.sqlite import SQLiteCheckpointStore

__all__ = [
    "Checkpoint", "CheckpointStore", "PostgresCheckpointStore", "SQLiteCheckpointStore", "TaskClaimedError",
    "TaskStatus",
]
