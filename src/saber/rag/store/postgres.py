"""PostgreSQL store with pgvector: the same ``rag_`` tables, vectors in a ``vector(dim)`` column
with an HNSW index (cosine). Several processes can share it.

The HNSW search is approximate; ``hnsw.ef_search`` is raised to at least twice ``k`` per query.
Chunks without a vector yet (NULL) are not in the HNSW index. A vector filler claims pending chunks
with ``FOR UPDATE SKIP LOCKED``, so two processes never embed the same chunk at once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from saber.db import mask_url
from saber.rag.documents import RagError
from saber.rag.embedder import Vectors
from saber.rag.store import queries_sql as sql
from saber.rag.store.base import Embed
from saber.rag.store.sql import SqlStore


class PostgresStore(SqlStore):
    kind = "postgres"
    def __init__(self, url: str, *, connect_timeout: float = 10.0, pool_size: int | None = None) -> None:
        self.url = url
        super().__init__(url, pool_size=pool_size, connect_timeout=connect_timeout)
        with self._cursor() as cur:
            installed = cur.run(sql.HAS_PGVECTOR).fetchone()
        if installed is None:
            self.close()
            raise RagError(
                f"PostgreSQL at {mask_url(url)} has no pgvector extension (the migration could not create it); "
                "install pgvector or use the embedded SQLite store"
            )

    def _lock_schema(self, cur: Any) -> None:
        cur.run(sql.LOCK_SCHEMA)

    def _vector_param(self, vector: Vectors) -> Any:
        return np.asarray(vector, dtype=np.float32)

    def _insert_chunk_rows(self, cur: Any, rows: list[tuple[Any, ...]]) -> None:
        """COPY (binary): about 3x the rate of row inserts, most of the cost being HNSW index upkeep."""
        with cur.driver_connection.cursor() as raw, raw.copy(
            "COPY rag_chunks (document_id, section_ordinal, ordinal, text, tokens, heading, rev, embedding) "
            "FROM STDIN WITH (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["text", "int4", "int4", "text", "text", "text", "int8", "vector"])
            for row in rows:
                copy.write_row(row)

    def fill_pending(self, embed: Embed, limit: int, document_id: str | None = None) -> int:
        """The claimed rows stay locked while they are embedded: another filler skips them, and a
        newer version of their document waits to delete them; a killed process's locks go with it."""
        with self._cursor(write=True) as cur:
            claimed = self._claim(cur, limit, document_id)
            if claimed:
                self._store_vectors(cur, [c for c, _ in claimed], embed([t for _, t in claimed]))
        return len(claimed)

    def _has_chunk_table(self, cur: Any) -> bool:
        return cur.run(sql.HAS_CHUNK_TABLE).fetchone()[0] is True

    def _create_chunk_table(self, cur: Any, dim: int) -> None:
        cur.execute(
            f"CREATE TABLE rag_chunks (id BIGSERIAL PRIMARY KEY, document_id TEXT NOT NULL, "
            f"section_ordinal INTEGER NOT NULL, ordinal INTEGER NOT NULL, text TEXT NOT NULL, "
            f"tokens TEXT NOT NULL, embedding vector({int(dim)}), heading TEXT NOT NULL DEFAULT '', "
            f"rev BIGINT NOT NULL DEFAULT 0)"
        )
        cur.execute("CREATE INDEX rag_chunks_document ON rag_chunks (document_id)")
        cur.execute("CREATE INDEX rag_chunks_rev ON rag_chunks (rev)")
        cur.execute("CREATE INDEX rag_chunks_pending ON rag_chunks (id) WHERE embedding IS NULL")
        cur.execute("CREATE INDEX rag_chunks_embedding ON rag_chunks USING hnsw (embedding vector_cosine_ops)")

    def vector_search(self, query: Vectors, k: int) -> list[tuple[int, float]]:
        if k <= 0:
            return []
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        with self._cursor() as cur:
            if not self._has_chunk_table(cur):
                return []
            cur.execute(f"SET LOCAL hnsw.ef_search = {max(40, 2 * int(k))}")
            rows = cur.run(sql.NEAREST, {"query": q, "k": int(k)}).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]
