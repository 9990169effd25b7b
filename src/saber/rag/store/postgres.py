"""PostgreSQL store with pgvector: the same ``rag_`` tables, vectors in a ``vector(dim)`` column
with an HNSW index (cosine). Several processes can share it.

The HNSW search is approximate; ``hnsw.ef_search`` is raised to at least twice ``k`` per query.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

import numpy as np

from saber.rag.documents import RagError
from saber.rag.embedder import Vectors
from saber.rag.store.sql import COMMON_SCHEMA, SqlStore


class PostgresStore(SqlStore):
    kind = "postgres"

    def __init__(self, url: str, *, connect_timeout: float = 10.0) -> None:
        super().__init__()
        import psycopg

        self.url = url
        try:
            self._conn = psycopg.connect(url, connect_timeout=int(connect_timeout), autocommit=True)
        except psycopg.OperationalError as exc:
            raise RagError(f"cannot connect to PostgreSQL: {str(exc).strip().splitlines()[0]}") from None
        try:
            with self._conn.transaction():
                self._conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.Error as exc:
            self._conn.close()
            raise RagError(
                f"PostgreSQL at this URL has no pgvector extension ({str(exc).strip().splitlines()[0]}); "
                "install pgvector or use the embedded SQLite store"
            ) from None
        from pgvector.psycopg import register_vector

        register_vector(self._conn)
        with self._cursor(write=True) as cur:
            self._lock_schema(cur)  # two processes creating the schema at once
            for statement in COMMON_SCHEMA:
                cur.execute(statement)

    def _lock_schema(self, cur: Any) -> None:
        cur.execute("SELECT pg_advisory_xact_lock(7261)")

    @contextlib.contextmanager
    def _transaction(self, write: bool) -> Iterator[Any]:
        with self._conn.transaction(), self._conn.cursor() as cur:
            yield cur

    def _sql(self, statement: str) -> str:
        return re.sub(r"\?", "%s", statement)

    def _vector_param(self, vector: Vectors) -> Any:
        return np.asarray(vector, dtype=np.float32)

    def _insert_chunk_rows(self, cur: Any, rows: list[tuple[Any, ...]]) -> None:
        """COPY (binary): about 3x the rate of row inserts, most of the cost being HNSW index upkeep."""
        with cur.copy(
            "COPY rag_chunks (document_id, section_ordinal, ordinal, text, tokens, embedding) FROM STDIN WITH (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["text", "int4", "int4", "text", "text", "vector"])
            for row in rows:
                copy.write_row(row)

    def _is_unique_violation(self, exc: Exception) -> bool:
        import psycopg.errors

        return isinstance(exc, psycopg.errors.UniqueViolation)

    def _has_chunk_table(self, cur: Any) -> bool:
        return cur.execute("SELECT to_regclass('rag_chunks') IS NOT NULL").fetchone()[0] is True

    def _create_chunk_table(self, cur: Any, dim: int) -> None:
        cur.execute(
            f"CREATE TABLE rag_chunks (id BIGSERIAL PRIMARY KEY, document_id TEXT NOT NULL, "
            f"section_ordinal INTEGER NOT NULL, ordinal INTEGER NOT NULL, text TEXT NOT NULL, "
            f"tokens TEXT NOT NULL, embedding vector({int(dim)}) NOT NULL)"
        )
        cur.execute("CREATE INDEX rag_chunks_document ON rag_chunks (document_id)")
        cur.execute("CREATE INDEX rag_chunks_embedding ON rag_chunks USING hnsw (embedding vector_cosine_ops)")

    def vector_search(self, query: Vectors, k: int) -> list[tuple[int, float]]:
        if k <= 0:
            return []
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        with self._cursor() as cur:
            if not self._has_chunk_table(cur):
                return []
            cur.execute(f"SET LOCAL hnsw.ef_search = {max(40, 2 * int(k))}")
            rows = cur.execute(
                "SELECT id, 1 - (embedding <=> %s) AS cosine FROM rag_chunks ORDER BY embedding <=> %s LIMIT %s",
                (q, q, int(k)),
            ).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]

    def close(self) -> None:
        with self._lock:
            self._conn.close()
