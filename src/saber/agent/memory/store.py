"""The storage interface behind memory: history, preferences and long-term memories, per user.

A store is dumb and exact: it keeps rows and answers queries, always scoped by ``user_id``.
Decisions (what to store, merging, scoring) live in ``history``, ``preferences`` and
``longterm``. Two implementations: ``SQLiteMemoryStore`` (the embedded default, tables ``mem_*``
in the shared ``saber.db``) and ``PostgresMemoryStore``; the same tests run against both.

Methods are synchronous and thread-safe; async callers run them in ``asyncio.to_thread``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

HistoryRole = Literal["system", "user", "assistant", "tool"]
HISTORY_ROLES: frozenset[str] = frozenset({"system", "user", "assistant", "tool"})
MAX_USER_ID = 200


class MemoryStoreError(Exception):
    """The store could not be opened or used (bad path, unreachable database); the message says which."""


@dataclass(frozen=True, kw_only=True, slots=True)
class HistoryEntry:
    """One message of a user's short-term conversation history."""

    role: HistoryRole
    content: str
    created_at: float
    """Unix seconds."""


@dataclass(frozen=True, kw_only=True, slots=True)
class MemoryRecord:
    """One long-term memory of a user: its text, importance, vector and when it was last used."""

    id: int
    user_id: str
    text: str
    norm: str
    """``normalise_text(text)``: equal norms are the same memory."""
    importance: float
    """0..1, how much this matters when recalling; bumped when the memory is said again."""
    created_at: float
    last_used_at: float
    """When it was last stored again or recalled (Unix seconds); drives recency."""
    uses: int
    source: str
    """rules | model | explicit"""
    embedder: str
    vector: npt.NDArray[np.float32]


@dataclass(frozen=True, kw_only=True, slots=True)
class NewMemory:
    text: str
    norm: str
    importance: float
    source: str
    embedder: str
    vector: npt.NDArray[np.float32]
    now: float


@runtime_checkable
class MemoryStore(Protocol):
    """Where memory lives (history, preferences, long-term memories), per user: SQLite by default,
    PostgreSQL with ``database_url``. Every method is scoped to one ``user_id``."""

    # history
    def append_history(self, user_id: str, role: HistoryRole, content: str, *, keep: int, now: float) -> None:
        """Append one message and drop the user's oldest beyond the last ``keep``."""
        ...

    def recent_history(self, user_id: str, n: int) -> list[HistoryEntry]:
        """The user's last ``n`` messages, oldest first."""
        ...

    def clear_history(self, user_id: str) -> None: ...

    # preferences
    def get_preferences(self, user_id: str) -> dict[str, str]: ...

    def set_preferences(self, user_id: str, updates: Mapping[str, str], *, now: float) -> None: ...

    def delete_preference(self, user_id: str, key: str) -> bool: ...

    # long-term memories
    def insert_memory(self, user_id: str, memory: NewMemory) -> tuple[MemoryRecord, bool]:
        """Insert, or when one with the same ``norm`` exists merge into it; ``True`` when merged."""
        ...

    def merge_memory(self, user_id: str, memory_id: int, memory: NewMemory) -> MemoryRecord | None:
        """Replace text/vector, set importance to max(old, new) + 0.1 (capped at 1), count a use."""
        ...

    def list_memories(self, user_id: str) -> list[MemoryRecord]: ...

    def touch_memories(self, user_id: str, ids: Sequence[int], *, now: float) -> None:
        """Mark memories as used now (they were recalled)."""
        ...

    def update_vectors(self, user_id: str, vectors: Mapping[int, npt.NDArray[np.float32]], embedder: str) -> None: ...

    def delete_memory(self, user_id: str, memory_id: int) -> bool: ...

    # housekeeping
    def forget_user(self, user_id: str) -> None:
        """Delete everything the store holds about one user."""
        ...

    def close(self) -> None: ...


MERGE_BUMP = 0.1


def merged_importance(old: float, new: float) -> float:
    """Saying something again makes it matter more: max of both plus a bump, capped at 1."""
    return min(1.0, max(old, new) + MERGE_BUMP)


def normalise_text(text: str) -> str:
    """Case-, width- and punctuation-insensitive form: "I like tea." and "i like  TEA" are equal."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    kept = "".join(ch if not unicodedata.category(ch).startswith(("P", "S")) else " " for ch in folded)
    return " ".join(kept.split())


def check_user_id(user_id: str) -> str:
    """User ids scope everything; an empty or oversized one is a caller bug worth a clear error."""
    if not isinstance(user_id, str) or not user_id.strip():
        raise ValueError("user_id: must be a non-empty string")
    if len(user_id) > MAX_USER_ID:
        raise ValueError(f"user_id: longer than {MAX_USER_ID} characters")
    return user_id


def vector_to_bytes(vector: npt.NDArray[np.float32]) -> bytes:
    import numpy as np

    return np.asarray(vector, dtype=np.float32).reshape(-1).tobytes()


def vector_from_bytes(raw: bytes | memoryview) -> npt.NDArray[np.float32]:
    import numpy as np

    return np.frombuffer(bytes(raw), dtype=np.float32).copy()
