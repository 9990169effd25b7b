"""``PostgresMemoryStore``: the same tables in PostgreSQL (psycopg 3), for several server processes.

Vectors are stored as ``bytea`` (float32) and compared in numpy: a user's memories are few, so a
brute-force cosine is exact and needs no extension. A dropped connection is reopened on the next
call (not inside a transaction, which fails as a whole and may simply be retried by the caller).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import errors as pg_errors

from saber.agent.memory._sql import Cursor, SQLMemoryStore, iter_statements
from saber.agent.memory.store import MemoryStoreError
from saber.config import mask_url

SCHEMA = """
CREATE TABLE IF NOT EXISTS mem_history (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id TEXT NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS mem_history_user ON mem_history (user_id, id);
CREATE TABLE IF NOT EXISTS mem_preferences (
    user_id TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (user_id, key)
);
CREATE TABLE IF NOT EXISTS mem_memories (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id TEXT NOT NULL,
    text TEXT NOT NULL,
    norm TEXT NOT NULL,
    importance DOUBLE PRECISION NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    last_used_at DOUBLE PRECISION NOT NULL,
    uses INTEGER NOT NULL DEFAULT 1,
    source TEXT NOT NULL,
    embedder TEXT NOT NULL,
    vector BYTEA NOT NULL,
    UNIQUE (user_id, norm)
)
"""


class PostgresMemoryStore(SQLMemoryStore):
    def __init__(self, url: str, *, connect_timeout: float = 10.0) -> None:
        super().__init__()
        self.url = url
        self._connect_timeout = connect_timeout
        self._depth = 0
        self._sql_cache: dict[str, str] = {}
        self._conn = self._connect()
        with self._lock, self._transaction():
            # Two processes creating the schema at once would race on the catalog: serialise them.
            self._execute("SELECT pg_advisory_xact_lock(hashtext('saber.mem_schema'))")
            for statement in iter_statements(SCHEMA):
                self._execute(statement)

    def _connect(self) -> psycopg.Connection[Any]:
        try:
            return psycopg.connect(self.url, autocommit=True, connect_timeout=max(1, int(self._connect_timeout)))
        except psycopg.Error as exc:
            raise MemoryStoreError(f"cannot connect to the memory database {mask_url(self.url)}: {exc}") from None

    def _live(self) -> psycopg.Connection[Any]:
        if self._depth == 0 and (self._conn.closed or self._conn.broken):
            self._conn = self._connect()
        return self._conn

    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        query = self._sql_cache.get(sql)
        if query is None:
            query = self._sql_cache[sql] = sql.replace("?", "%s")
        return self._live().execute(query.encode(), tuple(params))

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        conn = self._live()
        self._depth += 1
        try:
            with conn.transaction():
                yield
        finally:
            self._depth -= 1

    def _is_unique_violation(self, exc: BaseException) -> bool:
        return isinstance(exc, pg_errors.UniqueViolation)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
