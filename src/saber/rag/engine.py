"""``RagEngine``: ingest documents, retrieve with hybrid search, answer from the passages found."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from saber.lexical.fusion import RRF_K, reciprocal_rank_fusion
from saber.llm.base import ChatModel
from saber.llm.types import Message
from saber.rag.chunking import ChunkingConfig, chunk_document
from saber.rag.documents import (
    ChunkRecord,
    Document,
    DocumentNotFound,
    EmbeddingError,
    EmptyDocument,
    Hit,
    IngestResult,
    NewDocument,
    RagError,
    StoredChunk,
    normalize_text,
    stored_text,
)
from saber.rag.embedder import Embedder, Vectors
from saber.rag.filler import FillStatus, VectorFiller, describe_failure
from saber.rag.limits import ReadLimits
from saber.rag.scope import current_scope
from saber.rag.store.base import KnowledgeStore

if TYPE_CHECKING:
    from saber.lexical.bm25 import BM25Index
    from saber.rag.exact import RareTerm

log = logging.getLogger(__name__)

SearchMode = Literal["hybrid", "keyword", "vector"]
Reranker = Callable[[str, Sequence[Hit]], Sequence[float]]
"""Scores ``hits`` against the query (higher is better), e.g. a cross-encoder model."""
Progress = Callable[[int, int], None]
"""Called with (chunks of the document embedded so far, its total chunks)."""

CLAIMED_RETRY = 0.2
"""Seconds between looks when a waiting ingest's chunks are being embedded by another filler."""

GROUNDED_SYSTEM = (
    "Answer the question only from the provided context passages. If they do not contain the answer, "
    "say that the knowledge base does not contain it; never add facts from elsewhere. Cite passages as [n]."
)


class RagEngine:
    """The knowledge base: ingests files and text (loaders, parent/child chunking, embeddings) into
    a ``KnowledgeStore`` and answers ``search`` with hybrid retrieval (vectors and BM25, fused) that
    returns ``Hit``s with their parent section. Its tools (``knowledge_tools``) let the agent search
    and write it.

    An ingest stores the chunks and their tokens first (keyword-searchable at once) and their
    vectors after: before returning (``wait=True``, the default) or in the background
    (``wait=False``: a ``VectorFiller`` thread, which also embeds what other processes left)."""

    def __init__(
        self,
        store: KnowledgeStore,
        embedder: Embedder,
        *,
        chunking: ChunkingConfig | None = None,
        max_file_mb: float = 64.0,
        read_limits: ReadLimits | None = None,
        reranker: Reranker | None = None,
        generator: ChatModel | None = None,
        batch_size: int = 32,
        candidates: int = 30,
        background_vectors: bool = True,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.chunking = chunking or ChunkingConfig()
        self.max_bytes = int(max_file_mb * 1024 * 1024)
        self.read_limits = read_limits or ReadLimits()
        """What reading one file may inflate and extract (``rag_max_inflated_mb``, ``rag_max_ratio``,
        ``rag_max_text_chars``)."""
        self.reranker = reranker
        self.generator = generator
        self.batch_size = batch_size
        self.candidates = candidates
        self.background_vectors = background_vectors
        """Whether ``wait=False`` ingests start the background filler (else their vectors wait for
        ``fill_vectors`` here or in another process)."""
        self._lock = threading.Lock()
        self._keyword_lock = threading.Lock()
        self._bm25: tuple[int, BM25Index] | None = None
        self._embedding_ready = False
        self._filler: VectorFiller | None = None

    def close(self, *, filler_timeout: float = 30.0) -> None:
        """Stop the vector filler (after its current batch, waiting at most ``filler_timeout`` s),
        close the store and the embedder's connections (if it has any)."""
        if self._filler is not None:
            self._filler.stop(filler_timeout)
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

    def ingest_file(self, path: str | Path, *, wait: bool = True, on_progress: Progress | None = None,
                    cancel: threading.Event | None = None) -> IngestResult:
        """Read and store a file. Reading stops at the first limit it passes (``LimitExceeded``) or
        once ``cancel`` is set (``IngestCancelled``); either way nothing is stored: the document is
        written in one transaction, after the file was read."""
        from saber.rag.loaders import load_file  # the file readers (HTML, .docx...) load with the first file

        loaded = load_file(path, max_bytes=self.max_bytes, limits=self.read_limits, cancel=cancel)
        return self.ingest_text(loaded.title, loaded.text, source=loaded.source, doc_type=loaded.doc_type,
                                wait=wait, on_progress=on_progress)

    def ingest_text(
        self,
        title: str,
        content: str,
        *,
        source: str = "",
        doc_type: str = "md",
        summary: str = "",
        index: bool = True,
        wait: bool = True,
        on_progress: Progress | None = None,
        owner: str | None = None,
    ) -> IngestResult:
        """Store a document (and index it unless ``index`` is False). Same content again: a no-op.

        ``owner``: the user it is for (an upload, a document written in a user's request), recorded
        as its owner with it; None makes a shared document. The same text as a shared document or
        one of the owner's own is that document (``unchanged``); as another user's, a document of
        the owner's own, which reveals and shares nothing of the other (see ``_stored_copy``).

        Its chunks are keyword-searchable when the write commits; with ``wait`` their vectors are
        made before returning (an embedding failure raises, the chunks stay pending), without it
        the background filler makes them (``document.search`` says how far it is)."""
        text = normalize_text(content)
        title, source, summary = (v.replace("\x00", "") for v in (title, source, summary))  # as the text drops them
        if not title.strip():
            raise RagError("a document needs a title")
        if not text:
            raise EmptyDocument(f"{title}: the document has no text")
        doc = NewDocument(title=title.strip(), source=source.strip(), doc_type=doc_type, content=stored_text(content),
                          summary=summary, owner=owner)
        existing = self._stored_copy(doc)
        if existing is not None:
            if index and not existing.indexed:
                return self.index_document(existing.id, wait=wait, on_progress=on_progress)
            result = IngestResult(document=existing, status="unchanged", chunks=existing.chunk_count)
            return self._vectors_for(result, wait, on_progress) if index else result
        if not index:
            return self.store.save_document(doc, [], [])
        sections, chunks = self.chunk_text(doc.title, text)
        return self._vectors_for(self.store.save_document(doc, sections, chunks), wait, on_progress)

    def _stored_copy(self, doc: NewDocument) -> Document | None:
        """The stored document ``doc`` repeats, if any. Under its plain content hash: a shared
        document, or one the owner uploaded before owners were part of the key; a document there
        that only other users own is not the owner's to see, so it is passed over for the owner's
        own copy (``doc.dedupe_key``), which a new document becomes when there is none."""
        same = self.store.find_by_hash(doc.content_hash)
        if doc.owner is None:
            return same
        if same is not None:
            owners = self.store.owners(same.id)
            if not owners or doc.owner in owners:
                return same
        return self.store.find_by_hash(doc.dedupe_key)

    def index_document(self, document_id: str, *, wait: bool = True, on_progress: Progress | None = None) -> IngestResult:
        """Index a stored document (one written with ``index=False``); a no-op when it is indexed."""
        doc = self.store.get_document(document_id)
        if doc.indexed:
            return self._vectors_for(IngestResult(document=doc, status="unchanged", chunks=doc.chunk_count),
                                     wait, on_progress)
        sections, chunks = self.chunk_text(doc.title, doc.content or "")
        stored = self.store.index_document(document_id, sections, chunks)
        return self._vectors_for(IngestResult(document=stored, status="indexed", chunks=len(chunks)), wait, on_progress)

    def _vectors_for(self, result: IngestResult, wait: bool, on_progress: Progress | None) -> IngestResult:
        doc = result.document
        if doc.embedded_count >= doc.chunk_count:
            return result
        if not wait:
            if self.background_vectors:
                self.fill_in_background()
            return result
        done = doc.embedded_count

        def batch(n: int) -> None:
            nonlocal done
            done += n
            if on_progress is not None:
                on_progress(min(done, doc.chunk_count), doc.chunk_count)

        idle = threading.Event()
        while True:
            self.fill_vectors(document_id=doc.id, on_batch=batch)
            if not self.store.pending_count(doc.id):
                break
            idle.wait(CLAIMED_RETRY)  # another filler holds some of its chunks: they finish or are released
        try:
            refreshed = dataclasses.replace(self.store.get_document(doc.id), content=None)
        except DocumentNotFound:  # deleted meanwhile
            return result
        return dataclasses.replace(result, document=refreshed)

    def chunk_text(self, title: str, text: str) -> tuple[list[str], list[ChunkRecord]]:
        """The parent sections and child chunks (with their search tokens) a document is stored as."""
        from saber.lexical.bm25 import (
            tokenize,  # the tokenizer (and numpy) load with the first ingest or search
        )

        self._ensure_embedding()
        sections = chunk_document(text, self.chunking)
        if not sections:
            raise EmptyDocument(f"{title}: nothing to index")
        records: list[ChunkRecord] = []
        for s_index, section in enumerate(sections):
            header = " > ".join(dict.fromkeys((title, *section.headings)))
            for c_index, child in enumerate(section.children):
                records.append(ChunkRecord(section=s_index, ordinal=c_index, text=child, heading=header,
                                           tokens=tokenize(f"{header}\n{child}")))
        return [s.text for s in sections], records

    # -- vectors ---------------------------------------------------------------------------------

    def embed_passages(self, texts: list[str]) -> Vectors:
        """One batch of passages as unit vectors (raises EmbeddingError on a bad shape)."""
        import numpy as np

        part = np.asarray(self.embedder.embed_documents(texts), dtype=np.float32)
        if part.shape != (len(texts), self.embedder.dim):
            raise EmbeddingError(f"{self.embedder.name} returned shape {part.shape} for {len(texts)} texts")
        norms = np.linalg.norm(part, axis=1, keepdims=True)
        return (part / np.where(norms == 0, 1.0, norms)).astype(np.float32)

    def pending_count(self, document_id: str | None = None) -> int:
        """Chunks still without a vector (keyword-searchable, not yet found by vector search)."""
        return self.store.pending_count(document_id)

    def fill_vectors(self, *, document_id: str | None = None, stop: threading.Event | None = None,
                     on_batch: Callable[[int], None] | None = None) -> int:
        """Embed pending chunks (of one document, or all) in batches in the calling thread until
        none is left or ``stop`` is set; returns how many. Blocking: call it from a worker thread.

        A failure (the embedder or the store) is raised and recorded in the store for every process
        to see (``vector_status``); a pass that embeds anything forgets it."""
        total = 0
        try:
            self._ensure_embedding()
            while stop is None or not stop.is_set():
                n = self.store.fill_pending(self.embed_passages, self.batch_size, document_id)
                if n == 0:
                    break
                total += n
                if on_batch is not None:
                    on_batch(n)
        except Exception as exc:
            self._record_fill_failure(describe_failure(exc))
            raise
        if total:
            self._record_fill_failure(None)
        return total

    def _record_fill_failure(self, error: str | None) -> None:
        try:
            self.store.record_fill_failure(error)
        except Exception as exc:  # the store itself is failing: the caller reports the first error
            log.debug("could not record the vector fill's outcome: %s", exc)

    def vector_status(self) -> FillStatus:
        """How pending vectors are coming along: this process's filler when it runs (``filling``,
        ``idle``, or ``failing`` with its error and the seconds until it tries again), else the
        last failure any process recorded (``failing``), else ``stopped``. Reads the store."""
        status = self._filler.status() if self._filler is not None else FillStatus(state="stopped")
        if status.state != "stopped":
            return status
        try:
            failure = self.store.last_fill_failure()
        except Exception as exc:
            log.debug("could not read the last vector fill failure: %s", exc)
            return status
        if failure is None:
            return status
        return FillStatus(state="failing", error=failure[0], failed_at=failure[1])

    def fill_in_background(self) -> VectorFiller:
        """Start (or wake) the background filler: it embeds every pending chunk, then looks again
        every ``idle_poll`` seconds for chunks other processes left. Stopped by ``close``."""
        with self._lock:
            if self._filler is None:
                self._filler = VectorFiller(lambda stop: self.fill_vectors(stop=stop))
            filler = self._filler
        filler.kick()
        return filler

    # -- documents -------------------------------------------------------------------------------

    def list_documents(self, *, hidden: Collection[str] | None = None) -> list[Document]:
        """Every document but the ``hidden`` ones (default: those the current request's user may
        not see, see ``saber.rag.scope``)."""
        hidden = self._hidden(hidden)
        docs = self.store.list_documents()
        return [d for d in docs if d.id not in hidden] if hidden else docs

    def visible_document(self, document_id: str) -> Document:
        """``get_document``, as DocumentNotFound for a document the current request's user may not see."""
        if document_id in self._hidden(None):
            raise DocumentNotFound(f"no document with id {document_id!r}")
        return self.store.get_document(document_id)

    def _hidden(self, hidden: Collection[str] | None) -> Collection[str]:
        return self.hidden_now() if hidden is None else hidden

    def hidden_now(self) -> Collection[str]:
        """The documents the current request's user may not see (none outside a request)."""
        scope = current_scope()
        return self.hidden_from(scope.user_id) if scope is not None and scope.isolated else ()

    # -- owners: on a server with API keys, a user sees shared documents and their own ------------

    def add_owner(self, document_id: str, user_id: str) -> None:
        """Record ``user_id`` as an owner (``ingest_text(owner=...)`` records a new document's itself)."""
        self.store.add_owner(document_id, user_id)

    def owned_by(self, user_id: str) -> set[str]:
        return self.store.owned_by(user_id)

    def release(self, document_id: str, user_id: str) -> bool:
        """Drop ``user_id``'s claim; True when no other user holds the document."""
        return self.store.release(document_id, user_id)

    def hidden_from(self, user_id: str) -> set[str]:
        """The documents ``user_id`` may not see: owned by other users and not by them."""
        return self.store.hidden_from(user_id)

    def get_document(self, document_id: str) -> Document:
        return self.store.get_document(document_id)

    def delete_document(self, document_id: str) -> bool:
        return self.store.delete_document(document_id)

    # -- retrieval -------------------------------------------------------------------------------

    def _keyword_index(self) -> BM25Index:
        """The BM25 index at the store's revision: built once, then only the chunks added and
        removed since (from this or any other process) are applied."""
        from saber.lexical.bm25 import BM25Index

        with self._keyword_lock:
            held = self._bm25
            changes = self.store.keyword_changes(None if held is None else held[0])
            if held is None or changes.full:
                index = BM25Index(changes.ids, changes.tokens)
            else:
                index = held[1]
                if changes.removed:
                    index.remove(changes.removed)
                if changes.ids:
                    index.add(changes.ids, changes.tokens)
            self._bm25 = (changes.revision, index)
            return index

    def rare_terms(self, query: str) -> list[RareTerm]:
        """The ids, versions, error codes and rare words of ``query`` whose exact presence makes a
        passage relevant (``saber.rag.exact``), rarity measured against this knowledge base."""
        from saber.rag.exact import rare_terms

        index = self._keyword_index()
        return rare_terms(query, index.doc_freq, len(index))

    def search(self, query: str, k: int = 5, *, mode: SearchMode = "hybrid",
               hidden: Collection[str] | None = None, query_vector: Vectors | None = None) -> list[Hit]:
        """The best ``k`` chunks for ``query``, each with its parent section and an honest score.
        Chunks of the ``hidden`` documents (default: those the current request's user may not see)
        are left out before ranking, and the search goes deeper until enough others are found.
        ``query_vector``: the query's embedding, when the caller has it already."""
        if not query.strip() or k <= 0:
            return []
        hidden = self._hidden(hidden)
        from saber.lexical.bm25 import tokenize

        tokens = tokenize(query) if mode in ("hybrid", "keyword") else []
        if mode in ("hybrid", "vector") and self.loaded:
            self._ensure_embedding()
            if query_vector is None:
                query_vector = self.embedder.embed_query(query)
        else:
            query_vector = None
        depth = max(self.candidates, k)
        while True:
            keyword = self._keyword_index().search(tokens, depth) if tokens else []
            vector = self.store.vector_search(query_vector, depth) if query_vector is not None else []
            chunks: dict[int, StoredChunk] | None = None
            if not hidden:
                break
            chunks = self.store.get_chunks(list({c for c, _ in keyword} | {c for c, _ in vector}))
            exhausted = len(keyword) < depth and len(vector) < depth
            keyword, vector = _visible(keyword, chunks, hidden), _visible(vector, chunks, hidden)
            if exhausted or len({c for c, _ in keyword} | {c for c, _ in vector}) >= max(self.candidates, k):
                break
            depth *= 4
        if mode == "keyword":
            ranked = [(cid, score, "bm25") for cid, score in keyword]
        elif mode == "vector":
            ranked = [(cid, score, "cosine") for cid, score in vector]
        else:
            fused = reciprocal_rank_fusion([[c for c, _ in keyword], [c for c, _ in vector]], k=RRF_K)
            ranked = [(cid, score, "rrf") for cid, score in fused]
        details = _details(keyword, vector)
        limit = max(self.candidates, k) if self.reranker is not None else k
        hits = self._hits(ranked[:limit], details, chunks)
        if self.reranker is not None and hits:
            hits = self._rerank(query, hits)
        return hits[:k]

    def _hits(self, ranked: Sequence[tuple[int, float, str]], details: dict[int, dict[str, float]],
              chunks: dict[int, StoredChunk] | None = None) -> list[Hit]:
        if chunks is None:
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

    def search_or_keywords(self, query: str, k: int = 5) -> tuple[list[Hit], str | None]:
        """(hits, None) from a hybrid search; when the embedder fails, (keyword hits, why): the
        documents stay findable by their words while the embedder is down, and the caller says so."""
        try:
            return self.search(query, k), None
        except EmbeddingError as exc:
            log.warning("vector search failed, keyword search only: %s", exc)
            return self.search(query, k, mode="keyword"), str(exc)

    # -- answers ---------------------------------------------------------------------------------

    def query(self, q: str, k: int = 5) -> tuple[str, list[Hit]]:
        """(answer, hits): the answer is the best passages with their sources, quoted, not generated."""
        hits, failed = self.search_or_keywords(q, k)
        return format_passages(q, hits, vector_failure=failed, pending=self.pending_for(hits)), hits

    def pending_for(self, hits: Sequence[Hit]) -> int | None:
        """The chunks still without a vector when ``hits`` were found by keyword alone (what
        ``format_passages`` then says), else None: the store is asked only when it is said."""
        return self.pending_count() if found_by_keyword_alone(hits) else None

    async def aquery(self, q: str, k: int = 5) -> tuple[str, list[Hit]]:
        """Like ``query``; with a generator model, the answer is written by it from the passages only."""
        hits, failed = await asyncio.to_thread(self.search_or_keywords, q, k)
        if self.generator is None or not hits:
            pending = await asyncio.to_thread(self.pending_for, hits)
            return format_passages(q, hits, vector_failure=failed, pending=pending), hits
        passages = _unique_sections(hits)
        context = "\n\n".join(f"[{n}] {h.title}\n{h.context}" for n, h in enumerate(passages, start=1))
        completion = await self.generator.complete(
            [Message.system(GROUNDED_SYSTEM), Message.user(f"Context:\n{context}\n\nQuestion: {q}")]
        )
        sources = "; ".join(f"[{n}] {h.title}" for n, h in enumerate(passages, start=1))
        failure = f"\n(Vector search failed ({failed}): passages found by keyword search only.)" if failed else ""
        return f"{completion.text.strip()}\n\nSources: {sources}{failure}", hits


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


def found_by_keyword_alone(hits: Sequence[Hit]) -> bool:
    """Whether a hybrid search's ``hits`` all came from keyword search (none has a vector score):
    then ``format_passages`` says so, and how many chunks still wait for their vectors."""
    return bool(hits) and hits[0].score_kind == "rrf" and not any("cosine" in h.details for h in hits)


def format_passages(q: str, hits: Sequence[Hit], *, vector_failure: str | None = None,
                    pending: int | None = None) -> str:
    """The extractive answer: each distinct parent section once, best first, with its source.
    ``vector_failure``: why only keyword search ran (the embedder failed), said first.
    ``pending``: the knowledge base's chunks still without a vector (``RagEngine.pending_count``),
    said when vector search found none of the passages; None when the caller did not ask the store."""
    failed = f"Vector search failed ({vector_failure}): keyword search only.\n" if vector_failure else ""
    if not hits:
        return f"{failed}No passage in the knowledge base matches {q!r}."
    passages = _unique_sections(hits)
    how = _KIND_LABEL[hits[0].score_kind]
    if found_by_keyword_alone(hits):
        how = "keyword search: vector search found none of them"
        if pending:
            how += f"; {pending} chunk(s) of the knowledge base are still waiting for their vectors"
    lines = [f"{failed}{len(passages)} passage(s) from the knowledge base for {q!r} (ranked by {how}):"]
    for n, h in enumerate(passages, start=1):
        where = f" — {h.source}" if h.source and h.source != h.title else ""
        lines.append(f"\n[{n}] {h.title}{where}\n{h.context.strip()}")
    return "\n".join(lines)


def _visible(ranked: list[tuple[int, float]], chunks: Mapping[int, StoredChunk],
             hidden: Collection[str]) -> list[tuple[int, float]]:
    return [(cid, score) for cid, score in ranked if (c := chunks.get(cid)) is not None and c.document_id not in hidden]
