"""Chunks are keyword-searchable before their vectors exist; the vector filler fills them (resuming
what a killed process left), never twice at once on PostgreSQL, never for a replaced chunk."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from saber.rag import HashingEmbedder, RagEngine

StoreFactory = Callable[[], Any]
TEA = "# 茶\n\n绿茶不发酵，冲泡水温八十度左右。\n\n## 红茶\n\n红茶是全发酵茶，汤色红亮。"
CRANES = "\n\n".join(f"Paragraph {i} is about the harbour crane number {i}." for i in range(12))


class GatedEmbedder:
    """HashingEmbedder(64) whose passages wait for ``gate``; records every passage it embedded."""

    name = "hashing:64"
    dim = 64

    def __init__(self, barrier: threading.Barrier | None = None) -> None:
        self.inner = HashingEmbedder(64)
        self.gate = threading.Event()
        self.started = threading.Event()
        self.barrier = barrier
        self.embedded: list[str] = []
        self._lock = threading.Lock()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.started.set()
        if self.barrier is not None:
            self.barrier.wait()
        assert self.gate.wait(60), "the test never opened the gate"
        with self._lock:
            self.embedded.extend(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def test_keyword_search_finds_a_document_before_any_vector_then_vector_search_after_the_fill(
        store_factory: StoreFactory) -> None:
    embedder = GatedEmbedder()
    engine = RagEngine(store_factory(), embedder, batch_size=2)
    result = engine.ingest_text("Tea", TEA, wait=False)  # returns with the filler stuck on its first batch
    assert embedder.started.wait(30)
    doc = engine.get_document(result.document.id)
    assert doc.search == "keyword" and doc.embedded_count == 0 and doc.chunk_count > 0
    assert engine.search("红茶 发酵", 3, mode="keyword")[0].document_id == doc.id
    assert engine.search("红茶 发酵", 3, mode="vector") == []
    assert engine.search("红茶 发酵", 3)[0].document_id == doc.id  # hybrid: what exists
    embedder.gate.set()
    engine.fill_vectors()  # whatever the background filler has not taken
    assert engine._filler is not None and engine._filler.stop(30)
    doc = engine.get_document(doc.id)
    assert doc.search == "hybrid" and doc.embedded_count == doc.chunk_count and engine.pending_count() == 0
    assert engine.search("红茶 发酵", 3, mode="vector")[0].document_id == doc.id
    assert doc.to_dict()["embedded_chunks"] == doc.chunk_count and doc.to_dict()["search"] == "hybrid"
    engine.close()



def test_an_answer_says_how_many_chunks_wait_while_the_embedder_is_slow_and_nothing_once_done(
        store_factory: StoreFactory) -> None:
    embedder = GatedEmbedder()
    engine = RagEngine(store_factory(), embedder, batch_size=2)
    engine.ingest_text("Tea", TEA, wait=False)
    engine.ingest_text("Cranes", CRANES, wait=False)
    assert embedder.started.wait(30)  # the background filler is stuck on its first batch
    waiting = engine.pending_count()
    assert waiting > 2
    answer, _ = engine.query("红茶 发酵", 3)
    assert f"{waiting} chunk(s) of the knowledge base are still waiting for their vectors" in answer
    answer, _ = engine.query("harbour crane", 3)
    assert f"{waiting} chunk(s) of the knowledge base are still waiting for their vectors" in answer
    embedder.gate.set()
    engine.fill_vectors()
    assert engine._filler is not None and engine._filler.stop(30) and engine.pending_count() == 0
    for query in ("红茶 发酵", "harbour crane"):
        answer, hits = engine.query(query, 3)
        assert hits and "waiting for their vectors" not in answer and "may still be computed" not in answer
    engine.close()

def test_a_killed_fillers_pending_chunks_are_filled_by_the_next_process(
        store_factory: StoreFactory, store_url: str | None, tmp_path: Path) -> None:
    target = store_url or str(tmp_path / "saber.db")
    script = Path(__file__).with_name("filler_script.py")
    with subprocess.Popen([sys.executable, str(script), target], stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None and proc.stdout.readline().startswith("embedding 4")
        finally:
            proc.kill()
            proc.wait(30)
    engine = RagEngine(store_factory(), HashingEmbedder(64), batch_size=4)
    [doc] = engine.list_documents()
    assert doc.search == "keyword" and doc.embedded_count == 0
    assert "crane number 7." in engine.search("harbour crane 7", 1, mode="keyword")[0].chunk
    assert engine.fill_vectors() == doc.chunk_count  # the killed process's claim was released with it
    assert engine.list_documents()[0].search == "hybrid"
    assert "crane number 7." in engine.search("harbour crane number 7", 1, mode="vector")[0].chunk
    engine.close()


def test_a_replaced_documents_old_chunks_never_get_vectors(store_factory: StoreFactory) -> None:
    """The filler claims chunks of version 1; version 2 replaces them while they are embedded. No
    vector computed from version 1 lands on any chunk: version 2's chunks all stay pending."""
    store, other = store_factory(), store_factory()
    writer = RagEngine(other, HashingEmbedder(64), background_vectors=False)
    first = writer.ingest_text("Cranes", CRANES, source="cranes.md", wait=False)
    claimed: list[str] = []
    replaced = threading.Event()

    def replace() -> None:
        RagEngine(store_factory(), HashingEmbedder(64), background_vectors=False).ingest_text(
            "Cranes", CRANES.replace("crane", "ship"), source="cranes.md", wait=False)
        replaced.set()

    def embed(texts: list[str]) -> np.ndarray:
        claimed.extend(texts)
        thread = threading.Thread(target=replace)
        thread.start()
        thread.join(None if store.kind == "sqlite" else 1.0)
        if store.kind == "postgres":  # the replacement waits for the rows this filler holds
            assert not replaced.is_set()
        return HashingEmbedder(64).embed_documents(texts)

    assert store.fill_pending(embed, 100) == first.chunks
    replaced.wait(60)
    [doc] = writer.list_documents()
    assert doc.version == 2 and all("crane" in t for t in claimed)
    assert doc.embedded_count == 0 and store.pending_count(doc.id) == doc.chunk_count
    writer.close()


class RecordingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__(64)
        self.embedded: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.embedded.extend(texts)
        return super().embed_documents(texts)


def test_a_new_version_keeps_the_vectors_of_the_chunks_it_did_not_change(store_factory: StoreFactory) -> None:
    embedder = RecordingEmbedder()
    engine = RagEngine(store_factory(), embedder, background_vectors=False)
    cranes = "\n\n".join(f"Paragraph {i} is about the harbour crane number {i}." for i in range(60))
    first = engine.ingest_text("Cranes", cranes, source="cranes.md", wait=True).document
    assert engine.get_document(first.id).search == "hybrid"
    embedded_first = set(embedder.embedded)
    assert len(embedded_first) == first.chunk_count
    before = {hit.chunk: hit.score for hit in engine.search("harbour crane number 39", 3, mode="vector")}
    embedder.embedded.clear()

    edited = cranes.replace("crane number 4.", "crane number 4, rebuilt in 2025.") + "\n\nParagraph 12 is new."
    second = engine.ingest_text("Cranes", edited, source="cranes.md", wait=False)
    assert second.status == "new_version"
    doc = engine.get_document(first.id)
    pending = engine.pending_count(doc.id)
    assert 2 <= pending < doc.chunk_count // 2  # the changed chunks (and their overlapping neighbours) only
    assert doc.embedded_count == doc.chunk_count - pending
    after = {hit.chunk: hit.score for hit in engine.search("harbour crane number 39", 3, mode="vector")}
    kept = before.keys() & after.keys()
    assert kept and all(after[chunk] == before[chunk] for chunk in kept)  # far from the edits: the same vectors

    assert engine.fill_vectors() == pending and engine.pending_count() == 0
    again = set(embedder.embedded)
    assert len(again) == pending and not again & embedded_first  # nothing unchanged was embedded twice
    assert any("rebuilt in 2025" in t for t in again) and any("is new" in t for t in again)
    assert "rebuilt in 2025" in engine.search("rebuilt in 2025", 1, mode="vector")[0].chunk
    engine.close()


def test_two_fillers_never_embed_the_same_chunk(store_factory: StoreFactory) -> None:
    """Two fillers (two connections, as two processes) each hold a batch at the same moment: on
    PostgreSQL locked rows are skipped, on SQLite claimed rows are left out of the next claim."""
    barrier = threading.Barrier(2, timeout=30)  # both fillers hold a batch at the same moment
    embedders = [GatedEmbedder(barrier), GatedEmbedder(barrier)]
    writer = RagEngine(store_factory(), HashingEmbedder(64), background_vectors=False)
    doc = writer.ingest_text("Cranes", CRANES, wait=False).document
    engines = [RagEngine(store_factory(), e, batch_size=3) for e in embedders]
    for e in embedders:
        e.gate.set()
    counts: list[int] = []
    errors: list[BaseException] = []

    def fill(engine: RagEngine) -> None:
        try:
            counts.append(engine.fill_vectors())
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=fill, args=(e,)) for e in engines]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    texts = embedders[0].embedded + embedders[1].embedded
    assert len(texts) == len(set(texts)) == doc.chunk_count and all(e.embedded for e in embedders)
    assert sum(counts) == doc.chunk_count and writer.pending_count() == 0
    for engine in (*engines, writer):
        engine.close()


def test_a_failed_batch_releases_its_claim(store_factory: StoreFactory) -> None:
    writer = RagEngine(store_factory(), HashingEmbedder(64), background_vectors=False)
    doc = writer.ingest_text("Cranes", CRANES, wait=False).document

    def broken(texts: list[str]) -> np.ndarray:
        raise RuntimeError("embedder down")

    with pytest.raises(RuntimeError, match="embedder down"):
        writer.store.fill_pending(broken, 3)
    assert writer.fill_vectors() == doc.chunk_count  # the same process claims them again at once
    writer.close()


def test_keyword_index_of_another_process_applies_only_the_changes(store_factory: StoreFactory,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    writer = RagEngine(store_factory(), HashingEmbedder(64), background_vectors=False)
    reader_store = store_factory()
    reader = RagEngine(reader_store, HashingEmbedder(64))
    assert reader.search("发酵", 3, mode="keyword") == []
    seen: list[Any] = []
    changes = reader_store.keyword_changes
    monkeypatch.setattr(reader_store, "keyword_changes", lambda since: seen.append(changes(since)) or seen[-1])
    tea = writer.ingest_text("Tea", TEA, source="tea.md", wait=False).document
    assert reader.search("发酵", 3, mode="keyword")[0].document_id == tea.id
    writer.ingest_text("Tea", TEA.replace("红茶", "乌龙茶"), source="tea.md", wait=False)  # a new version
    hits = reader.search("乌龙茶", 5, mode="keyword")
    assert hits and all("红茶" not in h.chunk for h in hits) and reader.search("红茶", 5, mode="keyword") == []
    writer.delete_document(tea.id)
    assert reader.search("乌龙茶", 5, mode="keyword") == []
    assert [c.full for c in seen] == [False] * len(seen) and sum(len(c.removed) for c in seen) > 0
    writer.close()
    reader.close()


def test_a_keyword_index_older_than_the_removal_log_reloads(store_factory: StoreFactory,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from saber.rag.store import sql

    monkeypatch.setattr(sql, "KEEP_REMOVALS", 2)
    writer = RagEngine(store_factory(), HashingEmbedder(64), background_vectors=False)
    reader = RagEngine(store_factory(), HashingEmbedder(64))
    tea = writer.ingest_text("Tea", TEA, source="tea.md", wait=False).document
    assert reader.search("发酵", 3, mode="keyword")[0].document_id == tea.id
    for n in range(4):  # versions that prune the removal log past the reader's revision
        writer.ingest_text("Tea", TEA.replace("红茶", f"红茶{n}号"), source="tea.md", wait=False)
    writer.delete_document(tea.id)
    writer.ingest_text("K8s", "NodePort opens a port on every node.", wait=False)
    assert reader.search("发酵", 3, mode="keyword") == []
    assert reader.search("NodePort", 3, mode="keyword")[0].title == "K8s"
    writer.close()
    reader.close()


def test_the_revision_grows_when_vectors_are_filled(store_factory: StoreFactory) -> None:
    """Caches of search results (the agent's relevance threshold) key on it: a fill changes results."""
    engine = RagEngine(store_factory(), HashingEmbedder(64), background_vectors=False)
    engine.ingest_text("Tea", TEA, wait=False)
    written = engine.store.revision()
    engine.fill_vectors()
    assert engine.store.revision() > written
    engine.close()


def test_a_failed_fill_is_recorded_in_the_store_for_other_processes_and_forgotten_by_one_that_works(
        store_factory: StoreFactory) -> None:
    failing = RagEngine(store_factory(), HashingEmbedder(64), background_vectors=False)
    doc = failing.ingest_text("Tea", TEA, wait=False).document

    def broken(texts: list[str]) -> np.ndarray:
        raise RuntimeError("embedder down\n  on two lines")

    failing.embed_passages = broken  # type: ignore[method-assign]
    for _ in range(2):  # written, then written over
        with pytest.raises(RuntimeError, match="embedder down"):
            failing.fill_vectors()
    revision = failing.store.revision()
    other = RagEngine(store_factory(), HashingEmbedder(64), background_vectors=False)
    status = other.vector_status()
    assert status.state == "failing" and status.error == "RuntimeError: embedder down on two lines"
    assert status.failed_at is not None and status.retry_in_s is None
    assert other.store.revision() == revision  # not a change of documents or vectors: caches stay
    assert other.fill_vectors() == doc.chunk_count
    assert failing.vector_status().state == "stopped" and failing.store.last_fill_failure() is None
    failing.close()
    other.close()
