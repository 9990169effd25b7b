"""Memory: short-term history, preferences and long-term memories, per user, behind gates.

The Agent uses ``MemoryService``; the parts are importable for tests and other front ends.
"""

from saber.agent.memory.extract import ModelMemoryExtractor, extract_memories, parse_memory_json
from saber.agent.memory.gates import Rejection, check_memory_text
from saber.agent.memory.history import ShortTermHistory
from saber.agent.memory.longterm import (
    SUGGESTED_MIN_RELEVANCE,
    AddOutcome,
    LongTermMemory,
    MemoryCandidate,
    RecalledMemory,
    memory_weight,
)
from saber.agent.memory.preferences import (
    PREFERENCE_KEYS,
    ModelPreferenceExtractor,
    PreferenceExtraction,
    extract_preferences,
    extract_preferences_checked,
    parse_preference_json,
)
from saber.agent.memory.service import MemoryResult, MemoryService
from saber.agent.memory.sqlite_store import SQLiteMemoryStore
from saber.agent.memory.store import HistoryEntry, MemoryRecord, MemoryStore, MemoryStoreError, normalise_text

__all__ = [
    "PREFERENCE_KEYS",
    "SUGGESTED_MIN_RELEVANCE",
    "AddOutcome",
    "HistoryEntry",
    "LongTermMemory",
    "MemoryCandidate",
    "MemoryRecord",
    "MemoryResult",
    "MemoryService",
    "MemoryStore",
    "MemoryStoreError",
    "ModelMemoryExtractor",
    "ModelPreferenceExtractor",
    "PreferenceExtraction",
    "RecalledMemory",
    "Rejection",
    "SQLiteMemoryStore",
    "ShortTermHistory",
    "check_memory_text",
    "extract_memories",
    "extract_preferences",
    "extract_preferences_checked",
    "memory_weight",
    "normalise_text",
    "parse_memory_json",
    "parse_preference_json",
]


def __getattr__(name: str) -> object:
    # psycopg is an optional dependency: import the PostgreSQL store only when asked for.
    if name == "PostgresMemoryStore":
        from saber.agent.memory.postgres_store import PostgresMemoryStore

        return PostgresMemoryStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
