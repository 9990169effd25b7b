"""The embedded store: tables prefixed ``rag_`` in the app's one SQLite file (WAL, busy timeout).

Vectors are float32 blobs; search is a brute-force cosine over all of them with numpy (a matrix
product, the matrix cached until the store's revision changes). That is exact and fast enough up
to about 100k chunks (~150 MB of vectors at 384 dimensions); past that, use PostgreSQL + pgvector.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from saber.rag.embedder import Vectors
from saber.rag.store.sql import COMMON_SCHEMA, SqlStore


class SQLiteStore(SqlStore):
    kind = "sqlite"

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = 10_000) -> None:
        super().__init__()
        self.path = Path(path)
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = NORMAL")
        self._matrix: tuple[int, np.ndarray[Any, Any], np.ndarray[Any, Any]] | None = None
        with self._cursor(write=True) as cur:
            for statement in COMMON_SCHEMA:
                cur.execute(statement)

    @contextlib.contextmanager
    def _transaction(self, write: bool) -> Iterator[Any]:
        cur = self._conn.cursor()
        cur.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            yield cur
        except BaseException:
            cur.execute("ROLLBACK")
            raise
        else:
            cur.execute("COMMIT")
        finally:
            cur.close()

    def _sql(self, statement: str) -> str:
        return statement

    def _vector_param(self, vector: Vectors) -> Any:
        return np.ascontiguousarray(vector, dtype=np.float32).tobytes()

    def _is_unique_violation(self, exc: Exception) -> bool:
        return isinstance(exc, sqlite3.IntegrityError) and "UNIQUE" in str(exc)

    def _has_chunk_table(self, cur: Any) -> bool:
        row = cur.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'rag_chunks'").fetchone()
        return row is not None

    def _create_chunk_table(self, cur: Any, dim: int) -> None:
        cur.execute(
            "CREATE TABLE rag_chunks (id INTEGER PRIMARY KEY AUTOINCREMENT, document_id TEXT NOT NULL, "
            "section_ordinal INTEGER NOT NULL, ordinal INTEGER NOT NULL, text TEXT NOT NULL, "
            "tokens TEXT NOT NULL, embedding BLOB NOT NULL)"
        )
        cur.execute("CREATE INDEX IF NOT EXISTS rag_chunks_document ON rag_chunks (document_id)")

    def _vectors(self) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        with self._cursor() as cur:
            revision = int(cur.execute("SELECT value FROM rag_meta WHERE key = 'revision'").fetchone()[0])
            if self._matrix is not None and self._matrix[0] == revision:
                return self._matrix[1], self._matrix[2]
            if not self._has_chunk_table(cur):
                return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
            rows = cur.execute("SELECT id, embedding FROM rag_chunks ORDER BY id").fetchall()
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        if rows:
            matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
        else:
            matrix = np.zeros((0, 0), dtype=np.float32)
        self._matrix = (revision, ids, matrix)
        return ids, matrix

    def vector_search(self, query: Vectors, k: int) -> list[tuple[int, float]]:
        ids, matrix = self._vectors()
        if len(ids) == 0 or k <= 0:
            return []
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if q.shape[0] != matrix.shape[1]:
            raise ValueError(f"query vector has {q.shape[0]} dimensions, the index {matrix.shape[1]}")
        scores = matrix @ (q / (np.linalg.norm(q) or 1.0))  # rows are unit vectors: this is cosine
        k = min(k, len(ids))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(int(ids[i]), float(scores[i])) for i in top]

    def close(self) -> None:
        with self._lock:
            self._conn.close()
