"""What the SQLite and PostgreSQL stores share: the transactional document logic over the
``rag_`` tables (created by ``saber.db``'s migrations; ``rag_chunks`` here, sized for the
embedder). Each subclass supplies its vector encoding, chunk table and vector search.

Every write that adds or removes chunks first bumps the ``revision`` in ``rag_meta`` (on
PostgreSQL that row lock orders writers, so revisions commit in order), stamps the chunks it
writes with it and logs the ids it removes in ``rag_chunk_removals``: ``keyword_changes`` hands
a keyword index exactly what changed since the revision it holds. Chunks are written without
vectors; each backend's ``fill_pending`` claims and embeds them later (see ``saber.rag.filler``).
Chunk ids are never reused, so a vector written by id can only land on the chunk it was made for."""

from __future__ import annotations

import contextlib
import json
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from saber.db import Database, DatabaseError, Tx, open_database
from saber.rag.documents import (
    ChunkRecord,
    Document,
    DocumentNotFound,
    EmbeddingError,
    IngestResult,
    KeywordChanges,
    NewDocument,
    RagError,
    StoredChunk,
    hash_in_key,
)
from saber.rag.embedder import Vectors
from saber.rag.store import queries_sql as q
from saber.rag.store.base import Embed

KEEP_REMOVALS = 10_000
"""Revisions of removal log kept; a keyword index older than that reloads every chunk's tokens."""


class _Duplicate(Exception):
    """A unique constraint fired: another writer stored the same content or key first."""


class SqlStore(ABC):
    kind = "sql"

    def __init__(self, target: str, *, pool_size: int | None = None, connect_timeout: float = 10.0) -> None:
        try:
            self._db: Database = open_database(target, pool_size=pool_size, connect_timeout=connect_timeout)
        except DatabaseError as exc:
            raise RagError(str(exc)) from None

    # -- what a backend supplies ----------------------------------------------------------------

    @abstractmethod
    def _vector_param(self, vector: Vectors) -> Any: ...

    @abstractmethod
    def _create_chunk_table(self, cur: Any, dim: int) -> None: ...

    @abstractmethod
    def _has_chunk_table(self, cur: Any) -> bool: ...

    @abstractmethod
    def vector_search(self, query: Vectors, k: int) -> list[tuple[int, float]]: ...

    def close(self) -> None:
        self._db.close()

    # -- helpers ---------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _cursor(self, *, write: bool = False) -> Iterator[Tx]:
        with self._db.transaction(write=write) as tx:
            yield tx

    def _bump(self, cur: Tx, key: str = "revision") -> int:
        """Increment a counter in ``rag_meta`` (first thing in a write: its row lock orders writers); the new value."""
        cur.run(q.BUMP, {"key": key})
        return int(self._meta(cur, key) or 0)

    def _meta(self, cur: Tx, key: str) -> str | None:
        row = cur.run(q.META, {"key": key}).fetchone()
        return None if row is None else str(row[0])

    # -- KnowledgeStore --------------------------------------------------------------------------

    def _lock_schema(self, cur: Any) -> None:
        """Serialise schema changes between processes (a write transaction already does on SQLite)."""
        return None

    def ensure_embedding(self, name: str, dim: int) -> None:
        with self._cursor(write=True) as cur:
            self._lock_schema(cur)
            stored_name, stored_dim = self._meta(cur, "embedder"), self._meta(cur, "embedding_dim")
            if stored_name == name and stored_dim == str(dim) and self._has_chunk_table(cur):
                return
            if stored_dim is not None and self._has_chunk_table(cur):
                count = cur.run(q.COUNT_CHUNKS).fetchone()[0]
                if count:
                    raise EmbeddingError(
                        f"this knowledge base was indexed with {stored_name} ({stored_dim} dimensions) but the "
                        f"configured embedder is {name} ({dim} dimensions): configure the same embedder, or "
                        "delete the documents and ingest them again"
                    )
                if stored_dim != str(dim):
                    cur.run(q.DROP_CHUNK_TABLE)
            for key, value in (("embedder", name), ("embedding_dim", str(dim))):
                cur.run(q.FORGET_META, {"key": key})
                cur.run(q.SET_META, {"key": key, "value": value})
            if not self._has_chunk_table(cur):
                self._create_chunk_table(cur, dim)

    def recorded_embedder(self) -> str | None:
        with self._cursor() as cur:
            return self._meta(cur, "embedder")

    def revision(self) -> int:
        """Writes of documents and chunks plus vector fills: it grows with either."""
        with self._cursor() as cur:
            rows = cur.run(q.REVISIONS).fetchall()
        return sum(int(r[0]) for r in rows)

    def chunk_count(self) -> int:
        with self._cursor() as cur:
            if not self._has_chunk_table(cur):
                return 0
            return int(cur.run(q.COUNT_CHUNKS).fetchone()[0])

    def find_by_hash(self, key: str) -> Document | None:
        with self._cursor() as cur:
            return self._document(cur, "hash", key)

    def save_document(
        self, doc: NewDocument, sections: Sequence[str], chunks: Sequence[ChunkRecord], vectors: Vectors | None = None
    ) -> IngestResult:
        try:
            with self._cursor(write=True) as cur:
                return self._save(cur, doc, sections, chunks, vectors)
        except Exception as exc:
            if not (isinstance(exc, _Duplicate) or self._db.is_unique_violation(exc)):
                raise
        existing = self.find_by_hash(doc.dedupe_key)  # a concurrent writer stored it first
        if existing is None:
            raise RuntimeError(f"could not store {doc.title!r}: a concurrent write to the same document; try again")
        return IngestResult(document=existing, status="unchanged", chunks=existing.chunk_count)

    def _save(
        self, cur: Any, doc: NewDocument, sections: Sequence[str], chunks: Sequence[ChunkRecord], vectors: Vectors | None
    ) -> IngestResult:
        h = doc.dedupe_key
        same = self._document(cur, "hash", h)
        if same is not None:
            return IngestResult(document=same, status="unchanged", chunks=same.chunk_count)
        rev = self._bump(cur)
        now = datetime.now(UTC).isoformat()
        previous = self._document(cur, "key", doc.key)
        reuse: dict[tuple[str, str], Any] = {}
        if previous is None:
            doc_id = uuid.uuid4().hex
            cur.run(q.INSERT_DOCUMENT, {"id": doc_id, "doc_key": doc.key, "title": doc.title, "source": doc.source,
                                        "doc_type": doc.doc_type, "summary": doc.summary, "content_hash": h,
                                        "content": doc.content, "now": now})
            status = "created"
        else:
            doc_id = previous.id
            cur.run(q.KEEP_VERSION, {"id": doc_id})
            cur.run(q.NEW_VERSION, {"title": doc.title, "doc_type": doc.doc_type, "summary": doc.summary,
                                    "content_hash": h, "content": doc.content, "now": now, "id": doc_id})
            reuse = self._previous_vectors(cur, doc_id)
            self._clear_chunks(cur, doc_id, rev)
            status = "new_version"
        if doc.owner is not None:  # in the same transaction: never visible to others in between
            cur.run(q.ADD_OWNER, {"document_id": doc_id, "user_id": doc.owner})
        if chunks:
            self._write_chunks(cur, doc_id, sections, chunks, vectors, rev, reuse=reuse)
        stored = self._document(cur, "id", doc_id)
        assert stored is not None
        return IngestResult(document=stored, status=status, chunks=len(chunks))  # type: ignore[arg-type]

    def index_document(
        self, document_id: str, sections: Sequence[str], chunks: Sequence[ChunkRecord], vectors: Vectors | None = None
    ) -> Document:
        with self._cursor(write=True) as cur:
            rev = self._bump(cur)
            if self._document(cur, "id", document_id) is None:
                raise DocumentNotFound(f"no document with id {document_id!r}")
            reuse = self._previous_vectors(cur, document_id)
            self._clear_chunks(cur, document_id, rev)
            self._write_chunks(cur, document_id, sections, chunks, vectors, rev, reuse=reuse)
            stored = self._document(cur, "id", document_id)
            assert stored is not None
            return stored

    def _clear_chunks(self, cur: Any, doc_id: str, rev: int) -> None:
        if self._has_chunk_table(cur):
            cur.run(q.LOG_REMOVALS, {"rev": rev, "id": doc_id})
            cur.run(q.FORGET_CHUNKS, {"id": doc_id})
            floor = rev - KEEP_REMOVALS
            if floor > int(self._meta(cur, "removals_floor") or 0):
                cur.run(q.TRIM_REMOVALS, {"floor": floor})
                cur.run(q.SET_REMOVALS_FLOOR, {"value": str(floor)})
        cur.run(q.FORGET_SECTIONS, {"id": doc_id})
        cur.run(q.SET_INDEXED, {"indexed": 0, "id": doc_id})

    def _previous_vectors(self, cur: Any, doc_id: str) -> dict[tuple[str, str], Any]:
        """The vectors of a document's current chunks by (heading, text): what its next version can
        keep for the chunks it did not change (the store's one embedder made them all)."""
        if not self._has_chunk_table(cur):
            return {}
        rows = cur.run(q.PREVIOUS_VECTORS, {"id": doc_id}).fetchall()
        return {(str(r[0]), str(r[1])): r[2] for r in rows}

    def _write_chunks(
        self, cur: Any, doc_id: str, sections: Sequence[str], chunks: Sequence[ChunkRecord], vectors: Vectors | None,
        rev: int, *, reuse: dict[tuple[str, str], Any] | None = None,
    ) -> None:
        """Write the chunks with ``vectors``; without them, a chunk whose heading and text the
        previous version had (``reuse``) keeps that vector and only the others wait for the filler."""
        if vectors is not None and len(vectors) != len(chunks):
            raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors")
        if not self._has_chunk_table(cur):
            raise EmbeddingError("the embedder is not set up for this store: call ensure_embedding first")
        cur.run_many(q.INSERT_SECTION, [{"document_id": doc_id, "ordinal": i, "text": text}
                                        for i, text in enumerate(sections)])
        if vectors is not None:
            stored: list[Any] = [self._vector_param(v) for v in vectors]
        else:
            kept = reuse or {}
            stored = [kept.get((c.heading, c.text)) for c in chunks]
        self._insert_chunk_rows(cur, [
            (doc_id, c.section, c.ordinal, c.text, " ".join(c.tokens), c.heading, rev, stored[i])
            for i, c in enumerate(chunks)
        ])
        cur.run(q.SET_INDEXED, {"indexed": 1, "id": doc_id})

    def _insert_chunk_rows(self, cur: Tx, rows: list[tuple[Any, ...]]) -> None:
        """Rows of (document_id, section_ordinal, ordinal, text, tokens, heading, rev, embedding)."""
        cur.run_many(q.INSERT_CHUNK, [dict(zip(_CHUNK_ROW, row, strict=True)) for row in rows])

    def get_document(self, document_id: str) -> Document:
        with self._cursor() as cur:
            doc = self._document(cur, "id", document_id, with_content=True)
        if doc is None:
            raise DocumentNotFound(f"no document with id {document_id!r}")
        return doc

    def list_documents(self) -> list[Document]:
        with self._cursor() as cur:
            rows = cur.run(q.DOCUMENTS if self._has_chunk_table(cur) else q.DOCUMENTS_BARE).fetchall()
        return [_document(r) for r in rows]

    def delete_document(self, document_id: str) -> bool:
        with self._cursor(write=True) as cur:
            rev = self._bump(cur)
            if self._document(cur, "id", document_id) is None:
                return False
            self._clear_chunks(cur, document_id, rev)
            for statement in (q.FORGET_VERSIONS, q.FORGET_OWNERS, q.FORGET_DOCUMENT):
                cur.run(statement, {"id": document_id})
            return True

    # -- owners ----------------------------------------------------------------------------------

    def add_owner(self, document_id: str, user_id: str) -> None:
        with self._cursor(write=True) as cur:
            cur.run(q.ADD_OWNER, {"document_id": document_id, "user_id": user_id})

    def owners(self, document_id: str) -> set[str]:
        with self._cursor() as cur:
            rows = cur.run(q.OWNERS, {"document_id": document_id}).fetchall()
        return {str(r[0]) for r in rows}

    def owned_by(self, user_id: str) -> set[str]:
        with self._cursor() as cur:
            rows = cur.run(q.OWNED_BY, {"user_id": user_id}).fetchall()
        return {str(r[0]) for r in rows}

    def release(self, document_id: str, user_id: str) -> bool:
        """Drop ``user_id``'s claim on the document; True when no other user holds it (it may go)."""
        with self._cursor(write=True) as cur:
            cur.run(q.RELEASE, {"document_id": document_id, "user_id": user_id})
            left = cur.run(q.ANY_OWNER, {"document_id": document_id}).fetchone()
        return left is None

    def hidden_from(self, user_id: str) -> set[str]:
        """Documents other users own and ``user_id`` does not (documents nobody owns are shared)."""
        with self._cursor() as cur:
            rows = cur.run(q.HIDDEN_FROM, {"user_id": user_id}).fetchall()
        return {str(r[0]) for r in rows}

    def keyword_corpus(self) -> tuple[list[int], list[list[str]]]:
        with self._cursor() as cur:
            if not self._has_chunk_table(cur):
                return [], []
            rows = cur.run(q.KEYWORD_CORPUS).fetchall()
        return [int(r[0]) for r in rows], [str(r[1]).split() for r in rows]

    def keyword_changes(self, since: int | None) -> KeywordChanges:
        """The chunks added and removed after revision ``since`` (every chunk when ``since`` is None
        or older than the kept removal log), up to the revision read first: rows of later writes
        may be visible too and are left for the next call, so nothing is applied twice or missed."""
        with self._cursor() as cur:
            revision = int(self._meta(cur, "revision") or 0)
            if since == revision:
                return KeywordChanges(revision=revision, full=False)
            if not self._has_chunk_table(cur):
                return KeywordChanges(revision=revision, full=True)
            full = since is None or since < int(self._meta(cur, "removals_floor") or 0)
            low = -1 if full else since
            between = {"low": low, "high": revision}
            rows = cur.run(q.CHUNKS_WRITTEN, between).fetchall()
            removed = [] if full else [int(r[0]) for r in cur.run(q.CHUNKS_REMOVED, between).fetchall()]
        return KeywordChanges(revision=revision, full=full, ids=[int(r[0]) for r in rows],
                              tokens=[str(r[1]).split() for r in rows], removed=removed)

    # -- vectors filled after the write ----------------------------------------------------------

    def pending_count(self, document_id: str | None = None) -> int:
        with self._cursor() as cur:
            if not self._has_chunk_table(cur):
                return 0
            return int(cur.run(q.PENDING_COUNT, {"document_id": document_id}).fetchone()[0])

    def record_fill_failure(self, error: str | None) -> None:
        with self._cursor(write=True) as cur:
            if error is None:
                cur.run(q.FORGET_FILL_FAILURE)
                return
            value = json.dumps({"error": error, "at": datetime.now(UTC).isoformat()}, ensure_ascii=False)
            cur.run(q.RECORD_FILL_FAILURE, {"value": value})

    def last_fill_failure(self) -> tuple[str, datetime] | None:
        with self._cursor() as cur:
            raw = self._meta(cur, "fill_failure")
        try:
            data = json.loads(raw) if raw else None
            return None if not isinstance(data, dict) else (str(data["error"]), datetime.fromisoformat(data["at"]))
        except (ValueError, KeyError, TypeError):  # not written by this code: nothing known
            return None

    def _claim(self, cur: Tx, limit: int, document_id: str | None) -> list[tuple[int, str]]:
        """Chunks waiting for a vector that no other filler holds: on SQLite those without a claim
        row, on PostgreSQL rows this transaction locks (others' locked rows skipped)."""
        if not self._has_chunk_table(cur):
            return []
        rows = cur.run(q.CLAIM, {"document_id": document_id, "limit": limit}).fetchall()
        return [(int(r[0]), f"{r[1]}\n{r[2]}" if r[1] else str(r[2])) for r in rows]

    def _store_vectors(self, cur: Any, ids: Sequence[int], vectors: Vectors) -> int:
        """Write vectors of chunks still pending; a chunk removed meanwhile (a newer version of its
        document has new chunk ids: ids are never reused) matches no row and gets none."""
        cur.run_many(q.STORE_VECTOR, [{"embedding": self._vector_param(vectors[i]), "id": cid}
                                      for i, cid in enumerate(ids)])
        self._bump(cur, "vectors")
        return len(ids)

    @abstractmethod
    def fill_pending(self, embed: Embed, limit: int, document_id: str | None = None) -> int:
        """Embed up to ``limit`` chunks that have no vector yet (oldest first, of one document when
        given) with ``embed`` and store their vectors; returns how many were claimed (0: none left
        that this process may take)."""

    def get_chunks(self, ids: Sequence[int]) -> dict[int, StoredChunk]:
        if not ids:
            return {}
        with self._cursor() as cur:
            rows = cur.run(q.GET_CHUNKS, {"ids": json.dumps([int(i) for i in ids])}).fetchall()
        return {
            int(r[0]): StoredChunk(id=int(r[0]), document_id=r[1], title=r[2], source=r[3], text=r[4], section_text=r[5])
            for r in rows
        }

    def _document(self, cur: Tx, by: Literal["hash", "key", "id"], value: str, *,
                  with_content: bool = False) -> Document | None:
        """The document whose content hash, key or id is ``value``, with its chunk counts."""
        statements = _DOCUMENT_BY["content" if with_content else by]
        row = cur.run(statements[self._has_chunk_table(cur)], {"value": value}).fetchone()
        return None if row is None else _document(row)


_DOCUMENT_BY = {
    "hash": (q.DOCUMENT_BY_HASH_BARE, q.DOCUMENT_BY_HASH), "key": (q.DOCUMENT_BY_KEY_BARE, q.DOCUMENT_BY_KEY),
    "id": (q.DOCUMENT_BY_ID_BARE, q.DOCUMENT_BY_ID), "content": (q.DOCUMENT_WITH_CONTENT_BARE, q.DOCUMENT_WITH_CONTENT),
}
"""How a document is found → its statement (without, with the chunk table)."""
_CHUNK_ROW = ("document_id", "section_ordinal", "ordinal", "text", "tokens", "heading", "rev", "embedding")


def _when(value: Any) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))


def _document(row: Sequence[Any]) -> Document:
    return Document(
        id=row[0], title=row[1], source=row[2], doc_type=row[3], content_hash=hash_in_key(row[4]), version=int(row[5]),
        created_at=_when(row[6]), updated_at=_when(row[7]), summary=row[8] or "", indexed=bool(row[9]),
        chunk_count=int(row[10]), embedded_count=int(row[11]), content=row[12] if len(row) > 12 else None,
    )

