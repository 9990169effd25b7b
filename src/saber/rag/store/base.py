"""``KnowledgeStore``: where documents, parent sections and chunks (with vectors and tokens) live."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from saber.rag.documents import ChunkRecord, Document, IngestResult, KeywordChanges, NewDocument, StoredChunk
from saber.rag.embedder import Vectors

Embed = Callable[[list[str]], Vectors]
"""Turns the texts of pending chunks into their (unit) vectors, one row per text."""


@runtime_checkable
class KnowledgeStore(Protocol):
    """Where the knowledge base keeps documents, chunks and their vectors: ``SQLiteStore`` (default)
    or the PostgreSQL/pgvector store; ``open_store(url)`` picks one."""

    kind: str
    """``sqlite`` or ``postgres``."""

    def ensure_embedding(self, name: str, dim: int) -> None:
        """Record the embedder on first use; raise EmbeddingError if the indexed chunks came from another."""
        ...

    def recorded_embedder(self) -> str | None:
        """The name of the embedder the stored vectors came from (None before any was recorded)."""
        ...

    def revision(self) -> int:
        """A number that grows on every write of documents, chunks or vectors (from any process):
        caches of search results key on it."""
        ...

    def chunk_count(self) -> int: ...

    def find_by_hash(self, key: str) -> Document | None:
        """The document stored under ``key``: a content hash (a shared document, or one a user
        owned before owners were part of the key) or a ``dedupe_key`` with its owner."""
        ...

    def save_document(
        self, doc: NewDocument, sections: Sequence[str], chunks: Sequence[ChunkRecord], vectors: Vectors | None = None
    ) -> IngestResult:
        """All or nothing, in one transaction. Same ``dedupe_key`` as a stored document (the same
        text, and the same owner): nothing is written (``unchanged``); same key (source, else
        title): a new version replaces the old chunks; else a new document. ``doc.owner`` is
        recorded as an owner of what is written, in the same transaction. No ``chunks`` stores the
        document without indexing it; chunks without ``vectors`` are keyword-searchable at once and
        wait for ``fill_pending``."""
        ...

    def index_document(
        self, document_id: str, sections: Sequence[str], chunks: Sequence[ChunkRecord], vectors: Vectors | None = None
    ) -> Document:
        """Replace a stored document's chunks (used to index a document stored without them)."""
        ...

    def pending_count(self, document_id: str | None = None) -> int:
        """Chunks without a vector yet (of one document, when given)."""
        ...

    def fill_pending(self, embed: Embed, limit: int, document_id: str | None = None) -> int:
        """Embed and store up to ``limit`` pending chunks, oldest first; how many were claimed
        (0: none left that this process may take). A chunk replaced meanwhile never gets a vector."""
        ...

    def record_fill_failure(self, error: str | None) -> None:
        """Remember (or, with None, forget) why the last attempt to embed pending chunks failed,
        for every process to see (``saber docs list`` while a server's filler keeps failing)."""
        ...

    def last_fill_failure(self) -> tuple[str, datetime] | None:
        """The last recorded fill failure and when it happened; None once a fill worked."""
        ...

    def get_document(self, document_id: str) -> Document:
        """With its content; raises DocumentNotFound."""
        ...

    def list_documents(self) -> list[Document]: ...

    def delete_document(self, document_id: str) -> bool:
        """Remove the document, its versions, sections, chunks and owners; False if there was none."""
        ...

    def add_owner(self, document_id: str, user_id: str) -> None:
        """Record that the document is ``user_id``'s too (``save_document`` records a new
        document's owner itself)."""
        ...

    def owners(self, document_id: str) -> set[str]:
        """The users who own the document; none: it is shared."""
        ...

    def owned_by(self, user_id: str) -> set[str]: ...

    def release(self, document_id: str, user_id: str) -> bool:
        """Drop ``user_id``'s claim; True when no other user holds the document."""
        ...

    def hidden_from(self, user_id: str) -> set[str]:
        """Documents other users own and ``user_id`` does not (documents nobody owns are shared)."""
        ...

    def keyword_corpus(self) -> tuple[list[int], list[list[str]]]:
        """(chunk ids, their tokens) of every indexed chunk."""
        ...

    def keyword_changes(self, since: int | None) -> KeywordChanges:
        """What a keyword index at revision ``since`` must apply (everything when None)."""
        ...

    def vector_search(self, query: Vectors, k: int) -> list[tuple[int, float]]:
        """Top ``k`` (chunk id, cosine similarity) among the chunks that have a vector, best first."""
        ...

    def get_chunks(self, ids: Sequence[int]) -> dict[int, StoredChunk]: ...

    def close(self) -> None: ...
