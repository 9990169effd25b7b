"""Memory: short-term history, preferences and long-term memories, per user, behind gates.

The Agent uses ``MemoryService``; stores are SQLite (default) or PostgreSQL.
"""

from typing import TYPE_CHECKING

from saber.agent.memory.longterm import RecalledMemory
from saber.agent.memory.service import MemoryResult, MemoryService
from saber.agent.memory.sqlite_store import SQLiteMemoryStore
from saber.agent.memory.store import HistoryEntry, MemoryRecord, MemoryStore, MemoryStoreError

if TYPE_CHECKING:
    from saber.agent.memory.postgres_store import PostgresMemoryStore

__all__ = [
    "HistoryEntry",
    "MemoryRecord",
    "MemoryResult",
    "MemoryService",
    "MemoryStore",
    "MemoryStoreError",
    "PostgresMemoryStore",
    "RecalledMemory",
    "SQLiteMemoryStore",
]
"""The public names. The extraction, gates and scoring helpers are internal: import them from
their defining modules (``saber.agent.memory.extract``, ``.gates``, ``.longterm``...)."""


def __getattr__(name: str) -> object:
    # psycopg is an optional dependency: import the PostgreSQL store only when asked for.
    if name == "PostgresMemoryStore":
        from saber.agent.memory.postgres_store import PostgresMemoryStore

        return PostgresMemoryStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
