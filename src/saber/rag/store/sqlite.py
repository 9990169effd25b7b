"""The embedded store: tables prefixed ``rag_`` in the app's one SQLite file (WAL, busy timeout),
on the pool ``saber.db`` keeps for that file.

Vectors are float32 blobs (NULL until the vector filler embeds the chunk); search is a
brute-force cosine over the embedded chunks with numpy (a matrix product, the matrix cached until
a write or a vector fill changes it). That is exact and fast enough up
to about 100k chunks (~150 MB of vectors at 384 dimensions); past that, use PostgreSQL + pgvector.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from saber.rag.embedder import Vectors
from saber.rag.store import queries_sql as q
from saber.rag.store.base import Embed
from saber.rag.store.sql import SqlStore

if TYPE_CHECKING:
    import numpy as np

CLAIM_LEASE = 600.0
"""Seconds a filler's claim on pending chunks lasts even if its process id is taken by another."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


class SQLiteStore(SqlStore):
    """The knowledge base in one SQLite file, with exact vector search in memory."""

    kind = "sqlite"
    def __init__(self, path: str | Path, *, pool_size: int | None = None) -> None:
        self.path = Path(path)
        self._matrix: tuple[tuple[str, ...], np.ndarray[Any, Any], np.ndarray[Any, Any]] | None = None
        super().__init__(str(path), pool_size=pool_size)

    def _vector_param(self, vector: Vectors) -> Any:
        import numpy as np

        return np.ascontiguousarray(vector, dtype=np.float32).tobytes()

    def _has_chunk_table(self, cur: Any) -> bool:
        return cur.run(q.HAS_CHUNK_TABLE).fetchone() is not None

    def _create_chunk_table(self, cur: Any, dim: int) -> None:
        cur.execute(
            "CREATE TABLE rag_chunks (id INTEGER PRIMARY KEY AUTOINCREMENT, document_id TEXT NOT NULL, "
            "section_ordinal INTEGER NOT NULL, ordinal INTEGER NOT NULL, text TEXT NOT NULL, "
            "tokens TEXT NOT NULL, embedding BLOB, heading TEXT NOT NULL DEFAULT '', rev INTEGER NOT NULL DEFAULT 0)"
        )
        cur.execute("CREATE INDEX IF NOT EXISTS rag_chunks_document ON rag_chunks (document_id)")
        cur.execute("CREATE INDEX IF NOT EXISTS rag_chunks_rev ON rag_chunks (rev)")
        cur.execute("CREATE INDEX IF NOT EXISTS rag_chunks_pending ON rag_chunks (id) WHERE embedding IS NULL")

    def fill_pending(self, embed: Embed, limit: int, document_id: str | None = None) -> int:
        """Claims are rows in ``rag_embed_claims`` (process id, lease), taken in a short write: the
        write lock is not held while embedding, so ingests are never kept waiting. Every process
        on a SQLite file runs on this machine, so a dead process's claims are taken over at once."""
        with self._cursor(write=True) as cur:
            if not self._has_chunk_table(cur):
                return 0
            self._expire_claims(cur)
            claimed = self._claim(cur, limit, document_id)
            until = time.time() + CLAIM_LEASE
            cur.run_many(q.CLAIM_ROW, [{"chunk_id": cid, "pid": os.getpid(), "until": until} for cid, _ in claimed])
        if not claimed:
            return 0
        ids = [cid for cid, _ in claimed]
        try:
            vectors = embed([text for _, text in claimed])
        except BaseException:
            with self._cursor(write=True) as cur:
                self._release(cur, ids)
            raise
        with self._cursor(write=True) as cur:
            self._store_vectors(cur, ids, vectors)
            self._release(cur, ids)
        return len(claimed)

    def _expire_claims(self, cur: Any) -> None:
        pids = [int(r[0]) for r in cur.run(q.CLAIMED_PIDS).fetchall()]
        cur.run_many(q.FORGET_CLAIMS_OF, [{"pid": pid} for pid in pids if not _alive(pid)])
        cur.run(q.FORGET_EXPIRED_CLAIMS, {"now": time.time()})

    def _release(self, cur: Any, ids: Sequence[int]) -> None:
        cur.run_many(q.RELEASE_CLAIM, [{"chunk_id": cid} for cid in ids])

    def _vectors(self) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        import numpy as np

        with self._cursor() as cur:
            revision = tuple(str(r[0]) for r in cur.run(q.REVISIONS).fetchall())
            cached = self._matrix
            if cached is not None and cached[0] == revision:
                return cached[1], cached[2]
            if not self._has_chunk_table(cur):
                return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
            rows = cur.run(q.VECTORS).fetchall()
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        if rows:
            matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
        else:
            matrix = np.zeros((0, 0), dtype=np.float32)
        self._matrix = (revision, ids, matrix)
        return ids, matrix

    def vector_search(self, query: Vectors, k: int) -> list[tuple[int, float]]:
        import numpy as np

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
