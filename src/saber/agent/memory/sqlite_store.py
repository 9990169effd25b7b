"""``SQLiteMemoryStore``: memory in the embedded ``saber.db`` (tables ``mem_*``), the default.

The whole app shares one file; other modules open their own connections, so the file runs in
WAL mode with a busy timeout, and every write is a short ``BEGIN IMMEDIATE`` transaction. One
connection per store, guarded by a lock, serves all threads (``asyncio.to_thread`` workers).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from saber.agent.memory._sql import Cursor, SQLMemoryStore, iter_statements
from saber.agent.memory.store import MemoryStoreError

SCHEMA = """
CREATE TABLE IF NOT EXISTS mem_history (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS mem_history_user ON mem_history (user_id, id);
CREATE TABLE IF NOT EXISTS mem_preferences (
    user_id TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (user_id, key)
);
CREATE TABLE IF NOT EXISTS mem_memories (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT NOT NULL,
    text TEXT NOT NULL,
    norm TEXT NOT NULL,
    importance REAL NOT NULL,
    created_at REAL NOT NULL,
    last_used_at REAL NOT NULL,
    uses INTEGER NOT NULL DEFAULT 1,
    source TEXT NOT NULL,
    embedder TEXT NOT NULL,
    vector BLOB NOT NULL,
    UNIQUE (user_id, norm)
)
"""


class SQLiteMemoryStore(SQLMemoryStore):
    def __init__(self, path: str | Path, *, busy_timeout_ms: int = 10_000) -> None:
        super().__init__()
        self.path = Path(path).expanduser()
        try:
            if str(self.path) != ":memory:":
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(
                str(self.path), timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False
            )
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")
            with self._lock, self._transaction():
                for statement in iter_statements(SCHEMA):
                    self._conn.execute(statement)
        except (sqlite3.Error, OSError) as exc:
            raise MemoryStoreError(f"cannot open the memory database {self.path}: {exc}") from None

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        return self._conn.execute(sql, tuple(params))

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def _is_unique_violation(self, exc: BaseException) -> bool:
        return isinstance(exc, sqlite3.IntegrityError)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
