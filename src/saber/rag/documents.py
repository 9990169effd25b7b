"""The knowledge base's data: documents, their parent sections and child chunks, search hits, and errors."""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

SearchReadiness = Literal["none", "keyword", "hybrid"]

ScoreKind = Literal["rrf", "cosine", "bm25", "rerank"]
"""What a hit's ``score`` is. None of them is a percentage:

- ``cosine``: cosine similarity of the query and chunk embeddings, in [-1, 1];
- ``bm25``: an unbounded BM25 keyword score (only comparable within one query);
- ``rrf``: reciprocal-rank fusion, sum of 1/(60 + rank) over the rankings (at most 2/61 for two);
- ``rerank``: whatever the configured reranker returns.
"""


class RagError(Exception):
    """A knowledge-base operation that cannot be done; the message says what and why."""


class UnsupportedFileType(RagError):
    """A file whose type the loaders cannot read; the message lists the supported ones."""



class EmptyDocument(RagError):
    """A file or text with no text to index (an empty file, a scanned PDF without text)."""



class FileTooLarge(RagError):
    """A file over the ``rag_max_file_mb`` limit."""



class DocumentNotFound(RagError):
    """No document has that id."""



class EmbeddingError(RagError):
    """The embedder failed (endpoint unreachable, bad response, dimension mismatch).

    ``retryable`` only for what waiting can fix: an unreachable endpoint, a timeout, 429 or 5xx.
    """

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


def normalize_text(text: str) -> str:
    """NFC, unified newlines, no trailing spaces, at most one blank line in a row."""
    text = unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    lines = [line.rstrip() for line in text.split("\n")]
    out: list[str] = []
    for line in lines:
        if not line and out and not out[-1]:
            continue
        out.append(line)
    return "\n".join(out).strip()


def stored_text(text: str) -> str:
    """What a document keeps of its text: as written (a Markdown hard break's trailing spaces, the
    blank lines of a code block), with only line ends unified, NULs dropped and the blank lines
    around it trimmed; ``normalize_text`` is for chunks and the content hash."""
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").strip("\n")


def content_hash(text: str) -> str:
    """sha256 of the normalised text: the same content from another file or a retried call hashes alike."""
    return hashlib.sha256(normalize_text(text).encode("utf-8")).hexdigest()


def dedupe_key(text_hash: str, owner: str | None) -> str:
    """What the store tells documents apart by (its unique ``content_hash`` column): a shared
    document's content hash; for a document a user owns, ``<content hash>:<sha256 of the owner>``,
    so the same text in two users' hands is two documents and neither learns of the other's.
    The content hash leads: ``hash_in_key`` gives it back, whichever the key."""
    if owner is None:
        return text_hash
    return f"{text_hash}:{hashlib.sha256(owner.encode('utf-8')).hexdigest()}"


def hash_in_key(key: str) -> str:
    """The content hash in a ``dedupe_key`` (the sha256 of the text, what a document shows)."""
    return key.partition(":")[0]


@dataclass(frozen=True, kw_only=True, slots=True)
class Document:
    """A document in the knowledge base: id, title, where it came from, its type, version and chunk count."""

    id: str
    title: str
    source: str
    """Where it came from: a file path, a URL, ``agent`` for documents the agent wrote."""
    doc_type: str
    """txt | md | html | pdf | docx | report | note ..."""
    content_hash: str
    """sha256 of the normalised text (``content_hash``), whoever owns the document."""
    version: int
    created_at: datetime
    updated_at: datetime
    summary: str = ""
    indexed: bool = False
    """True when its chunks are in the retrieval index."""
    chunk_count: int = 0
    embedded_count: int = 0
    """Chunks that have their vector (the rest are keyword-searchable and wait for the vector filler)."""
    content: str | None = None
    """The full text; only filled by ``get_document``."""

    @property
    def search(self) -> SearchReadiness:
        """How it can be found: ``none`` (stored, not indexed), ``keyword`` (vectors still being
        filled: keyword search finds every chunk, vector search only the embedded ones) or ``hybrid``."""
        if not self.indexed or not self.chunk_count:
            return "none"
        return "hybrid" if self.embedded_count >= self.chunk_count else "keyword"

    def to_dict(self, *, with_content: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "title": self.title,
            "source": self.source,
            "doc_type": self.doc_type,
            "content_hash": self.content_hash,
            "version": self.version,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "summary": self.summary,
            "indexed": self.indexed,
            "chunk_count": self.chunk_count,
            "embedded_chunks": self.embedded_count,
            "search": self.search,
        }
        if with_content:
            data["content"] = self.content
        return data


@dataclass(frozen=True, kw_only=True, slots=True)
class NewDocument:
    """What an ingest hands the store."""

    title: str
    source: str
    doc_type: str
    content: str
    summary: str = ""
    owner: str | None = None
    """The user it is written for (an upload, a document the agent writes in a user's request):
    recorded as its owner, and part of its ``dedupe_key``. None: a shared document (``saber ingest``)."""

    @property
    def key(self) -> str:
        """Documents with the same key are versions of one document: the source, else the title."""
        return self.source.strip() or self.title.strip()

    @property
    def content_hash(self) -> str:
        return content_hash(self.content)

    @property
    def dedupe_key(self) -> str:
        """What makes it the same document as a stored one: its text, and its owner if it has one."""
        return dedupe_key(self.content_hash, self.owner)


@dataclass(frozen=True, kw_only=True, slots=True)
class ChunkRecord:
    """One child chunk ready to store: its text, the parent section it belongs to, tokens and vector."""

    section: int
    """Index into the sections list of the same ingest."""
    ordinal: int
    text: str
    tokens: list[str]
    heading: str = ""
    """Document title and section headings: embedded as the line before ``text``."""


@dataclass(frozen=True, kw_only=True, slots=True)
class KeywordChanges:
    """What a keyword index must apply to reach ``revision``: every chunk (``full``), or the chunks
    added (``ids`` with their ``tokens``) and ``removed`` since the revision it had."""

    revision: int
    full: bool
    ids: list[int] = field(default_factory=list)
    tokens: list[list[str]] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True, slots=True)
class StoredChunk:
    id: int
    document_id: str
    title: str
    source: str
    text: str
    section_text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Hit:
    """One search result: the matched passage, its parent section, its document and its score."""

    document_id: str
    title: str
    source: str
    chunk_id: int
    chunk: str
    """The small chunk that matched."""
    context: str
    """Its parent section (small-to-big): what a reader or a model should see."""
    score: float
    score_kind: ScoreKind
    rank: int
    details: dict[str, float] = field(default_factory=dict)
    """Per-method figures behind a fused score, e.g. ``{"bm25_rank": 1, "cosine": 0.83}``."""

    def to_event(self) -> dict[str, Any]:
        return {
            "document_id": self.document_id,
            "title": self.title,
            "source": self.source,
            "chunk_id": self.chunk_id,
            "chunk": self.chunk,
            "score": round(self.score, 6),
            "score_kind": self.score_kind,
            "rank": self.rank,
        }


IngestStatus = Literal["created", "new_version", "unchanged", "indexed"]


@dataclass(frozen=True, kw_only=True, slots=True)
class IngestResult:
    """What ingesting one file or text did: the document, whether it was created, a new version,
    unchanged or re-indexed, and how many chunks it has."""

    document: Document
    status: IngestStatus
    """created; new_version (same source/title, new content); unchanged (same content: nothing done);
    indexed (an existing document was added to the index)."""
    chunks: int = 0
