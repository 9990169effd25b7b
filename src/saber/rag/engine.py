"""``RagEngine``: ingest documents, retrieve with hybrid search, answer from the passages found."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import numpy as np

from saber.llm.base import ChatModel
from saber.llm.types import Message
from saber.rag.chunking import ChunkingConfig, chunk_document
from saber.rag.documents import (
    ChunkRecord,
    Document,
    EmbeddingError,
    EmptyDocument,
    Hit,
    IngestResult,
    NewDocument,
    RagError,
    normalize_text,
)
from saber.rag.embedder import Embedder, Vectors
from saber.rag.fusion import RRF_K, reciprocal_rank_fusion
from saber.rag.keyword import BM25Index, tokenize
from saber.rag.loaders import load_file
from saber.rag.store.base import KnowledgeStore

SearchMode = Literal["hybrid", "keyword", "vector"]
Reranker = Callable[[str, Sequence[Hit]], Sequence[float]]
"""Scores ``hits`` against the query (higher is better), e.g. a cross-encoder model."""
Progress = Callable[[int, int], None]
"""Called with (chunks embedded so far, total chunks)."""

GROUNDED_SYSTEM = (
    "Answer the question only from the provided context passages. If they do not contain the answer, "
    "say that the knowledge base does not contain it; never add facts from elsewhere. Cite passages as [n]."
)


class RagEngine:
    """The knowledge base: ingests files and text (loaders, parent/child chunking, embeddings) into
    a ``KnowledgeStore`` and answers ``search`` with hybrid retrieval (vectors and BM25, fused) that
    returns ``Hit``s with their parent section. Its tools (``knowledge_tools``) let the agent search
    and write it."""

    def __init__(
        self,
        store: KnowledgeStore,
        embedder: Embedder,
        *,
        chunking: ChunkingConfig | None = None,
        max_file_mb: float = 64.0,
        reranker: Reranker | None = None,
        generator: ChatModel | None = None,
        batch_size: int = 32,
        candidates: int = 30,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.chunking = chunking or ChunkingConfig()
        self.max_bytes = int(max_file_mb * 1024 * 1024)
        self.reranker = reranker
        self.generator = generator
        self.batch_size = batch_size
        self.candidates = candidates
        self._lock = threading.Lock()
        self._bm25: tuple[int, BM25Index] | None = None
        self._embedding_ready = False

    def close(self) -> None:
        """Close the store and the embedder's connections (if it has any)."""
        self.store.close()
        close = getattr(self.embedder, "close", None)
        if callable(close):
            close()

    # -- state -----------------------------------------------------------------------------------

    @property
    def loaded(self) -> bool:
        """True exactly when the store holds at least one indexed chunk (asked of the store each time)."""
        return self.store.chunk_count() > 0

    def _ensure_embedding(self) -> None:
        if not self._embedding_ready:
            self.store.ensure_embedding(self.embedder.name, self.embedder.dim)
            self._embedding_ready = True

    # -- ingest ----------------------------------------------------------------------------------

    def ingest_file(self, path: str | Path, *, on_progress: Progress | None = None) -> IngestResult:
        loaded = load_file(path, max_bytes=self.max_bytes)
        return self.ingest_text(loaded.title, loaded.text, source=loaded.source, doc_type=loaded.doc_type,
                                on_progress=on_progress)

    def ingest_text(
        self,
        title: str,
        content: str,
        *,
        source: str = "",
        doc_type: str = "md",
        summary: str = "",
        index: bool = True,
        on_progress: Progress | None = None,
    ) -> IngestResult:
        """Store a document (and index it unless ``index`` is False). Same content again: a no-op."""
        text = normalize_text(content)
        if not title.strip():
            raise RagError("a document needs a title")
        if not text:
            raise EmptyDocument(f"{title}: the document has no text")
        doc = NewDocument(title=title.strip(), source=source.strip(), doc_type=doc_type, content=text, summary=summary)
        existing = self.store.find_by_hash(doc.content_hash)
        if existing is not None:
            if index and not existing.indexed:
                return self.index_document(existing.id, on_progress=on_progress)
            return IngestResult(document=existing, status="unchanged", chunks=existing.chunk_count)
        if not index:
            return self.store.save_document(doc, [], [], None)
        sections, chunks, vectors = self._prepare(doc.title, text, on_progress)
        return self.store.save_document(doc, sections, chunks, vectors)

    def index_document(self, document_id: str, *, on_progress: Progress | None = None) -> IngestResult:
        """Index a stored document (one written with ``index=False``); a no-op when it is indexed."""
        doc = self.store.get_document(document_id)
        if doc.indexed:
            return IngestResult(document=doc, status="unchanged", chunks=doc.chunk_count)
        sections, chunks, vectors = self._prepare(doc.title, doc.content or "", on_progress)
        stored = self.store.index_document(document_id, sections, chunks, vectors)
        return IngestResult(document=stored, status="indexed", chunks=len(chunks))

    def _prepare(self, title: str, text: str, on_progress: Progress | None) -> tuple[list[str], list[ChunkRecord], Vectors]:
        self._ensure_embedding()
        sections = chunk_document(text, self.chunking)
        if not sections:
            raise EmptyDocument(f"{title}: nothing to index")
        records: list[ChunkRecord] = []
        inputs: list[str] = []
        for s_index, section in enumerate(sections):
            header = " > ".join(dict.fromkeys((title, *section.headings)))
            for c_index, child in enumerate(section.children):
                contextual = f"{header}\n{child}"
                records.append(ChunkRecord(section=s_index, ordinal=c_index, text=child, tokens=tokenize(contextual)))
                inputs.append(contextual)
        vectors = self._embed(inputs, on_progress)
        return [s.text for s in sections], records, vectors

    def _embed(self, texts: list[str], on_progress: Progress | None) -> Vectors:
        parts: list[Vectors] = []
        done = 0
        for i in range(0, len(texts), self.batch_size):
            batch = texts[i:i + self.batch_size]
            part = np.asarray(self.embedder.embed_documents(batch), dtype=np.float32)
            if part.shape != (len(batch), self.embedder.dim):
                raise EmbeddingError(f"{self.embedder.name} returned shape {part.shape} for {len(batch)} texts")
            parts.append(part)
            done += len(batch)
            if on_progress is not None:
                on_progress(done, len(texts))
        matrix = np.concatenate(parts, axis=0)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32)

    # -- documents -------------------------------------------------------------------------------

    def list_documents(self) -> list[Document]:
        return self.store.list_documents()

    def get_document(self, document_id: str) -> Document:
        return self.store.get_document(document_id)

    def delete_document(self, document_id: str) -> bool:
        return self.store.delete_document(document_id)

    # -- retrieval -------------------------------------------------------------------------------

    def _keyword_index(self) -> BM25Index:
        revision = self.store.revision()
        with self._lock:
            if self._bm25 is None:
                ids, docs = self.store.keyword_corpus()
                self._bm25 = (revision, BM25Index(ids, docs))
            elif self._bm25[0] != revision:  # a write: apply the difference, do not rebuild
                ids, docs = self.store.keyword_corpus()
                self._bm25[1].sync(ids, docs)
                self._bm25 = (revision, self._bm25[1])
            return self._bm25[1]

    def search(self, query: str, k: int = 5, *, mode: SearchMode = "hybrid") -> list[Hit]:
        """The best ``k`` chunks for ``query``, each with its parent section and an honest score."""
        if not query.strip() or k <= 0:
            return []
        depth = max(self.candidates, k)
        keyword: list[tuple[int, float]] = []
        vector: list[tuple[int, float]] = []
        if mode in ("hybrid", "keyword"):
            keyword = self._keyword_index().search(tokenize(query), depth)
        if mode in ("hybrid", "vector") and self.loaded:
            self._ensure_embedding()
            vector = self.store.vector_search(self.embedder.embed_query(query), depth)
        if mode == "keyword":
            ranked = [(cid, score, "bm25") for cid, score in keyword]
        elif mode == "vector":
            ranked = [(cid, score, "cosine") for cid, score in vector]
        else:
            fused = reciprocal_rank_fusion([[c for c, _ in keyword], [c for c, _ in vector]], k=RRF_K)
            ranked = [(cid, score, "rrf") for cid, score in fused]
        details = _details(keyword, vector)
        limit = depth if self.reranker is not None else k
        hits = self._hits(ranked[:limit], details)
        if self.reranker is not None and hits:
            hits = self._rerank(query, hits)
        return hits[:k]

    def _hits(self, ranked: Sequence[tuple[int, float, str]], details: dict[int, dict[str, float]]) -> list[Hit]:
        chunks = self.store.get_chunks([cid for cid, _, _ in ranked])
        hits: list[Hit] = []
        for cid, score, kind in ranked:
            c = chunks.get(cid)
            if c is None:  # deleted between the index read and now
                continue
            hits.append(Hit(document_id=c.document_id, title=c.title, source=c.source, chunk_id=cid, chunk=c.text,
                            context=c.section_text, score=score, score_kind=kind,  # type: ignore[arg-type]
                            rank=len(hits) + 1, details=details.get(cid, {})))
        return hits

    def _rerank(self, query: str, hits: list[Hit]) -> list[Hit]:
        assert self.reranker is not None
        scores = list(self.reranker(query, hits))
        if len(scores) != len(hits):
            raise RagError(f"the reranker returned {len(scores)} scores for {len(hits)} hits")
        order = sorted(range(len(hits)), key=lambda i: -float(scores[i]))
        return [
            Hit(document_id=h.document_id, title=h.title, source=h.source, chunk_id=h.chunk_id, chunk=h.chunk,
                context=h.context, score=float(scores[i]), score_kind="rerank", rank=rank,
                details={**h.details, "before_rerank": float(h.rank)})
            for rank, (i, h) in enumerate(((i, hits[i]) for i in order), start=1)
        ]

    # -- answers ---------------------------------------------------------------------------------

    def query(self, q: str, k: int = 5) -> tuple[str, list[Hit]]:
        """(answer, hits): the answer is the best passages with their sources, quoted, not generated."""
        hits = self.search(q, k)
        return format_passages(q, hits), hits

    async def aquery(self, q: str, k: int = 5) -> tuple[str, list[Hit]]:
        """Like ``query``; with a generator model, the answer is written by it from the passages only."""
        hits = await asyncio.to_thread(self.search, q, k)
        if self.generator is None or not hits:
            return format_passages(q, hits), hits
        passages = _unique_sections(hits)
        context = "\n\n".join(f"[{n}] {h.title}\n{h.context}" for n, h in enumerate(passages, start=1))
        completion = await self.generator.complete(
            [Message.system(GROUNDED_SYSTEM), Message.user(f"Context:\n{context}\n\nQuestion: {q}")]
        )
        sources = "; ".join(f"[{n}] {h.title}" for n, h in enumerate(passages, start=1))
        return f"{completion.text.strip()}\n\nSources: {sources}", hits


def _details(keyword: list[tuple[int, float]], vector: list[tuple[int, float]]) -> dict[int, dict[str, float]]:
    out: dict[int, dict[str, float]] = {}
    for rank, (cid, score) in enumerate(keyword, start=1):
        out.setdefault(cid, {}).update(bm25=score, bm25_rank=float(rank))
    for rank, (cid, score) in enumerate(vector, start=1):
        out.setdefault(cid, {}).update(cosine=score, vector_rank=float(rank))
    return out


def _unique_sections(hits: Sequence[Hit]) -> list[Hit]:
    seen: set[tuple[str, str]] = set()
    out: list[Hit] = []
    for h in hits:
        key = (h.document_id, h.context)
        if key not in seen:
            seen.add(key)
            out.append(h)
    return out


_KIND_LABEL = {
    "rrf": "reciprocal-rank fusion of keyword and vector search",
    "cosine": "cosine similarity",
    "bm25": "BM25 keyword score",
    "rerank": "reranker score",
}


def format_passages(q: str, hits: Sequence[Hit]) -> str:
    """The extractive answer: each distinct parent section once, best first, with its source."""
    if not hits:
        return f"No passage in the knowledge base matches {q!r}."
    passages = _unique_sections(hits)
    lines = [f"{len(passages)} passage(s) from the knowledge base for {q!r} "
             f"(ranked by {_KIND_LABEL[hits[0].score_kind]}):"]
    for n, h in enumerate(passages, start=1):
        where = f" — {h.source}" if h.source and h.source != h.title else ""
        lines.append(f"\n[{n}] {h.title}{where}\n{h.context.strip()}")
    return "\n".join(lines)
