"""The SQL both stores share. Subclasses supply the connection, the DDL and transactions.

Statements are written with ``?`` placeholders; the PostgreSQL store rewrites them to ``%s``.
Every statement is scoped by ``user_id``: no method reads or writes another user's rows.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, cast

import numpy as np
import numpy.typing as npt

from saber.agent.memory.store import (
    HISTORY_ROLES,
    HistoryEntry,
    HistoryRole,
    MemoryRecord,
    NewMemory,
    check_user_id,
    merged_importance,
    vector_from_bytes,
    vector_to_bytes,
)

_MEMORY_COLUMNS = "id, user_id, text, norm, importance, created_at, last_used_at, uses, source, embedder, vector"


class Cursor(Protocol):
    """The slice of a DB-API cursor the shared code uses."""

    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


class SQLMemoryStore(ABC):
    """History, preferences and memories over any DB-API connection, guarded by one lock."""

    def __init__(self) -> None:
        self._lock = threading.RLock()

    # --- what a dialect provides -------------------------------------------------------------

    @abstractmethod
    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor: ...

    @abstractmethod
    def _transaction(self) -> AbstractContextManager[None]:
        """A write transaction; the caller holds ``self._lock``."""

    @abstractmethod
    def _is_unique_violation(self, exc: BaseException) -> bool: ...

    @abstractmethod
    def close(self) -> None: ...

    # --- history -----------------------------------------------------------------------------

    def append_history(self, user_id: str, role: HistoryRole, content: str, *, keep: int, now: float) -> None:
        check_user_id(user_id)
        if role not in HISTORY_ROLES:
            raise ValueError(f"role: must be one of {sorted(HISTORY_ROLES)}, got {role!r}")
        if keep < 1:
            raise ValueError("keep: must be at least 1")
        with self._lock, self._transaction():
            self._execute(
                "INSERT INTO mem_history (user_id, role, content, created_at) VALUES (?, ?, ?, ?)",
                (user_id, role, content, now),
            )
            self._execute(
                "DELETE FROM mem_history WHERE user_id = ? AND id <= "
                "(SELECT id FROM mem_history WHERE user_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)",
                (user_id, user_id, keep),
            )

    def recent_history(self, user_id: str, n: int) -> list[HistoryEntry]:
        check_user_id(user_id)
        if n <= 0:
            return []
        with self._lock:
            rows = self._execute(
                "SELECT role, content, created_at FROM mem_history WHERE user_id = ? ORDER BY id DESC LIMIT ?",
                (user_id, n),
            ).fetchall()
        return [HistoryEntry(role=r[0], content=r[1], created_at=float(r[2])) for r in reversed(rows)]

    def clear_history(self, user_id: str) -> None:
        check_user_id(user_id)
        with self._lock, self._transaction():
            self._execute("DELETE FROM mem_history WHERE user_id = ?", (user_id,))

    # --- preferences -------------------------------------------------------------------------

    def get_preferences(self, user_id: str) -> dict[str, str]:
        check_user_id(user_id)
        with self._lock:
            rows = self._execute(
                "SELECT key, value FROM mem_preferences WHERE user_id = ? ORDER BY key", (user_id,)
            ).fetchall()
        return {r[0]: r[1] for r in rows}

    def set_preferences(self, user_id: str, updates: Mapping[str, str], *, now: float) -> None:
        check_user_id(user_id)
        if not updates:
            return
        with self._lock, self._transaction():
            for key, value in updates.items():
                self._execute(
                    "INSERT INTO mem_preferences (user_id, key, value, updated_at) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (user_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                    (user_id, key, value, now),
                )

    def delete_preference(self, user_id: str, key: str) -> bool:
        check_user_id(user_id)
        with self._lock, self._transaction():
            row = self._execute(
                "DELETE FROM mem_preferences WHERE user_id = ? AND key = ? RETURNING key", (user_id, key)
            ).fetchone()
        return row is not None

    # --- long-term memories ------------------------------------------------------------------

    def insert_memory(self, user_id: str, memory: NewMemory) -> tuple[MemoryRecord, bool]:
        check_user_id(user_id)
        for attempt in range(2):
            try:
                with self._lock, self._transaction():
                    row = self._execute(
                        "SELECT id FROM mem_memories WHERE user_id = ? AND norm = ?", (user_id, memory.norm)
                    ).fetchone()
                    if row is not None:
                        merged = self._merge(user_id, int(row[0]), memory)
                        assert merged is not None  # found in this same transaction
                        return merged, True
                    inserted = self._execute(
                        f"INSERT INTO mem_memories (user_id, text, norm, importance, created_at, last_used_at, uses, "
                        f"source, embedder, vector) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?) RETURNING {_MEMORY_COLUMNS}",
                        (
                            user_id, memory.text, memory.norm, _clamp(memory.importance), memory.now, memory.now,
                            memory.source, memory.embedder, vector_to_bytes(memory.vector),
                        ),
                    ).fetchone()
                    return _record(inserted), False
            except Exception as exc:
                # Another process inserted the same text between our SELECT and INSERT: merge instead.
                if attempt == 0 and self._is_unique_violation(exc):
                    continue
                raise
        raise AssertionError("unreachable")

    def merge_memory(self, user_id: str, memory_id: int, memory: NewMemory) -> MemoryRecord | None:
        check_user_id(user_id)
        with self._lock, self._transaction():
            return self._merge(user_id, memory_id, memory)

    def _merge(self, user_id: str, memory_id: int, memory: NewMemory) -> MemoryRecord | None:
        row = self._execute(
            "SELECT importance FROM mem_memories WHERE user_id = ? AND id = ?", (user_id, memory_id)
        ).fetchone()
        if row is None:
            return None
        # The new wording wins, unless it would collide with another memory of the same norm.
        clash = self._execute(
            "SELECT id FROM mem_memories WHERE user_id = ? AND norm = ? AND id <> ?", (user_id, memory.norm, memory_id)
        ).fetchone()
        text_sql = "" if clash is not None else "text = ?, norm = ?, vector = ?, embedder = ?, "
        text_params: tuple[Any, ...] = (
            () if clash is not None else (memory.text, memory.norm, vector_to_bytes(memory.vector), memory.embedder)
        )
        updated = self._execute(
            f"UPDATE mem_memories SET {text_sql}importance = ?, last_used_at = ?, uses = uses + 1 "
            f"WHERE user_id = ? AND id = ? RETURNING {_MEMORY_COLUMNS}",
            (*text_params, merged_importance(float(row[0]), _clamp(memory.importance)), memory.now, user_id, memory_id),
        ).fetchone()
        return _record(updated)

    def list_memories(self, user_id: str) -> list[MemoryRecord]:
        check_user_id(user_id)
        with self._lock:
            rows = self._execute(
                f"SELECT {_MEMORY_COLUMNS} FROM mem_memories WHERE user_id = ? ORDER BY id", (user_id,)
            ).fetchall()
        return [_record(r) for r in rows]

    def touch_memories(self, user_id: str, ids: Sequence[int], *, now: float) -> None:
        check_user_id(user_id)
        if not ids:
            return
        with self._lock, self._transaction():
            for memory_id in ids:
                self._execute(
                    "UPDATE mem_memories SET last_used_at = ?, uses = uses + 1 WHERE user_id = ? AND id = ?",
                    (now, user_id, int(memory_id)),
                )

    def update_vectors(self, user_id: str, vectors: Mapping[int, npt.NDArray[np.float32]], embedder: str) -> None:
        check_user_id(user_id)
        with self._lock, self._transaction():
            for memory_id, vector in vectors.items():
                self._execute(
                    "UPDATE mem_memories SET vector = ?, embedder = ? WHERE user_id = ? AND id = ?",
                    (vector_to_bytes(vector), embedder, user_id, int(memory_id)),
                )

    def delete_memory(self, user_id: str, memory_id: int) -> bool:
        check_user_id(user_id)
        with self._lock, self._transaction():
            row = self._execute(
                "DELETE FROM mem_memories WHERE user_id = ? AND id = ? RETURNING id", (user_id, int(memory_id))
            ).fetchone()
        return row is not None

    def forget_user(self, user_id: str) -> None:
        check_user_id(user_id)
        with self._lock, self._transaction():
            for table in ("mem_history", "mem_preferences", "mem_memories"):
                self._execute(f"DELETE FROM {table} WHERE user_id = ?", (user_id,))

    def __enter__(self) -> SQLMemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, float(value)))


def _record(row: Any) -> MemoryRecord:
    r = cast(Sequence[Any], row)
    return MemoryRecord(
        id=int(r[0]), user_id=r[1], text=r[2], norm=r[3], importance=float(r[4]), created_at=float(r[5]),
        last_used_at=float(r[6]), uses=int(r[7]), source=r[8], embedder=r[9], vector=vector_from_bytes(r[10]),
    )


def iter_statements(script: str) -> Iterator[str]:
    """Split a DDL script on ``;`` (the DDL here holds no semicolons inside statements)."""
    for statement in script.split(";"):
        if statement.strip():
            yield statement.strip()
