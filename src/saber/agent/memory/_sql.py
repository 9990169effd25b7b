"""The SQL both stores share, on a ``saber.db`` database (its engine's pool, transactions and
migrated ``mem_*`` tables). A write is one transaction; the rows of one write go in one
``executemany``. Every statement is scoped by ``user_id``: no method reads or writes another
user's rows. Methods block; async callers run them in worker threads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from saber.agent.memory import queries_sql as q
from saber.agent.memory.store import (
    HISTORY_ROLES,
    HistoryEntry,
    HistoryRole,
    MemoryRecord,
    MemoryStoreError,
    NewMemory,
    check_user_id,
    merged_importance,
    vector_from_bytes,
    vector_to_bytes,
)
from saber.db import Database, DatabaseError, Tx, open_database

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

class SQLMemoryStore:
    """History, preferences and memories in the ``mem_*`` tables of a SQLite file or PostgreSQL."""

    def __init__(self, target: str, *, pool_size: int | None = None, connect_timeout: float = 10.0) -> None:
        try:
            self._db: Database = open_database(target, pool_size=pool_size, connect_timeout=connect_timeout)
        except DatabaseError as exc:
            raise MemoryStoreError(f"cannot open the memory database ({exc})") from None

    def close(self) -> None:
        self._db.close()

    # --- history -----------------------------------------------------------------------------

    def append_history(self, user_id: str, role: HistoryRole, content: str, *, keep: int, now: float) -> None:
        check_user_id(user_id)
        if role not in HISTORY_ROLES:
            raise ValueError(f"role: must be one of {sorted(HISTORY_ROLES)}, got {role!r}")
        if keep < 1:
            raise ValueError("keep: must be at least 1")
        with self._db.transaction(write=True) as tx:
            tx.run(q.APPEND_HISTORY, {"user_id": user_id, "role": role, "content": content, "created_at": now})
            tx.run(q.TRIM_HISTORY, {"user_id": user_id, "keep": keep})

    def recent_history(self, user_id: str, n: int) -> list[HistoryEntry]:
        check_user_id(user_id)
        if n <= 0:
            return []
        with self._db.transaction() as tx:
            rows = tx.run(q.RECENT_HISTORY, {"user_id": user_id, "n": n}).fetchall()
        return [HistoryEntry(role=r[0], content=r[1], created_at=float(r[2])) for r in reversed(rows)]

    def clear_history(self, user_id: str) -> None:
        check_user_id(user_id)
        with self._db.transaction(write=True) as tx:
            tx.run(q.CLEAR_HISTORY, {"user_id": user_id})

    # --- preferences -------------------------------------------------------------------------

    def get_preferences(self, user_id: str) -> dict[str, str]:
        check_user_id(user_id)
        with self._db.transaction() as tx:
            rows = tx.run(q.PREFERENCES, {"user_id": user_id}).fetchall()
        return {r[0]: r[1] for r in rows}

    def set_preferences(self, user_id: str, updates: Mapping[str, str], *, now: float) -> None:
        check_user_id(user_id)
        if not updates:
            return
        with self._db.transaction(write=True) as tx:
            tx.run_many(q.SET_PREFERENCE, [{"user_id": user_id, "key": key, "value": value, "updated_at": now}
                                           for key, value in updates.items()])

    def delete_preference(self, user_id: str, key: str) -> bool:
        check_user_id(user_id)
        with self._db.transaction(write=True) as tx:
            row = tx.run(q.DELETE_PREFERENCE, {"user_id": user_id, "key": key}).fetchone()
        return row is not None

    # --- long-term memories ------------------------------------------------------------------

    def insert_memory(self, user_id: str, memory: NewMemory) -> tuple[MemoryRecord, bool]:
        check_user_id(user_id)
        for attempt in range(2):
            try:
                with self._db.transaction(write=True) as tx:
                    row = tx.run(q.FIND_MEMORY, {"user_id": user_id, "norm": memory.norm}).fetchone()
                    if row is not None:
                        merged = self._merge(tx, user_id, int(row[0]), memory)
                        assert merged is not None  # found in this same transaction
                        return merged, True
                    inserted = tx.run(q.INSERT_MEMORY, {
                        "user_id": user_id, "text": memory.text, "norm": memory.norm,
                        "importance": _clamp(memory.importance), "now": memory.now, "source": memory.source,
                        "embedder": memory.embedder, "vector": vector_to_bytes(memory.vector),
                    }).fetchone()
                    return _record(inserted), False
            except Exception as exc:
                # Another process inserted the same text between our SELECT and INSERT: merge instead.
                if attempt == 0 and self._db.is_unique_violation(exc):
                    continue
                raise
        raise AssertionError("unreachable")

    def merge_memory(self, user_id: str, memory_id: int, memory: NewMemory) -> MemoryRecord | None:
        check_user_id(user_id)
        with self._db.transaction(write=True) as tx:
            return self._merge(tx, user_id, memory_id, memory)

    def _merge(self, tx: Tx, user_id: str, memory_id: int, memory: NewMemory) -> MemoryRecord | None:
        this = {"user_id": user_id, "id": memory_id}
        row = tx.run(q.MEMORY_IMPORTANCE, this).fetchone()
        if row is None:
            return None
        used = {**this, "importance": merged_importance(float(row[0]), _clamp(memory.importance)), "now": memory.now}
        # The new wording wins, unless it would collide with another memory of the same norm.
        if tx.run(q.OTHER_WITH_NORM, {**this, "norm": memory.norm}).fetchone() is not None:
            return _record(tx.run(q.MERGE_MEMORY_KEEP_TEXT, used).fetchone())
        return _record(tx.run(q.MERGE_MEMORY, {
            **used, "text": memory.text, "norm": memory.norm, "vector": vector_to_bytes(memory.vector),
            "embedder": memory.embedder}).fetchone())

    def list_memories(self, user_id: str) -> list[MemoryRecord]:
        check_user_id(user_id)
        with self._db.transaction() as tx:
            rows = tx.run(q.LIST_MEMORIES, {"user_id": user_id}).fetchall()
        return [_record(r) for r in rows]

    def touch_memories(self, user_id: str, ids: Sequence[int], *, now: float) -> None:
        check_user_id(user_id)
        if not ids:
            return
        with self._db.transaction(write=True) as tx:
            tx.run_many(q.TOUCH_MEMORY, [{"now": now, "user_id": user_id, "id": int(memory_id)} for memory_id in ids])

    def update_vectors(self, user_id: str, vectors: Mapping[int, npt.NDArray[np.float32]], embedder: str) -> None:
        check_user_id(user_id)
        with self._db.transaction(write=True) as tx:
            tx.run_many(q.SET_VECTOR, [{"vector": vector_to_bytes(vector), "embedder": embedder, "user_id": user_id,
                                        "id": int(memory_id)} for memory_id, vector in vectors.items()])

    def delete_memory(self, user_id: str, memory_id: int) -> bool:
        check_user_id(user_id)
        with self._db.transaction(write=True) as tx:
            row = tx.run(q.DELETE_MEMORY, {"user_id": user_id, "id": int(memory_id)}).fetchone()
        return row is not None

    def forget_user(self, user_id: str) -> None:
        check_user_id(user_id)
        with self._db.transaction(write=True) as tx:
            for statement in (q.CLEAR_HISTORY, q.FORGET_PREFERENCES, q.FORGET_MEMORIES):
                tx.run(statement, {"user_id": user_id})

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

