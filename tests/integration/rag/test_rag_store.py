"""One suite, both stores (SQLite and PostgreSQL + pgvector)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from saber.rag import HashingEmbedder, RagEngine
from saber.rag.documents import ChunkRecord, DocumentNotFound, NewDocument

StoreFactory = Callable[[], Any]


def _vectors(n: int, dim: int = 8, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _records(n: int) -> list[ChunkRecord]:
    return [ChunkRecord(section=i // 2, ordinal=i % 2, text=f"chunk {i}", tokens=[f"t{i}", "common"]) for i in range(n)]


def test_save_read_list_delete(store_factory: StoreFactory) -> None:
    store = store_factory()
    store.ensure_embedding("test", 8)
    assert store.chunk_count() == 0
    r0 = store.revision()
    doc = NewDocument(title="T", source="s.md", doc_type="md", content="hello world")
    result = store.save_document(doc, ["sec 0", "sec 1"], _records(4), _vectors(4))
    assert result.status == "created" and result.document.chunk_count == 4 and result.document.indexed
    assert store.revision() > r0
    full = store.get_document(result.document.id)
    assert full.content == "hello world" and full.version == 1
    ids, tokens = store.keyword_corpus()
    assert len(ids) == 4 and all("common" in t for t in tokens)
    chunks = store.get_chunks(ids)
    assert {c.section_text for c in chunks.values()} == {"sec 0", "sec 1"}
    assert [d.id for d in store.list_documents()] == [result.document.id]
    assert store.delete_document(result.document.id) is True
    assert store.chunk_count() == 0 and store.keyword_corpus() == ([], []) and store.list_documents() == []
    with pytest.raises(DocumentNotFound):
        store.get_document(result.document.id)


def test_vector_search_ranks_by_cosine(store_factory: StoreFactory) -> None:
    store = store_factory()
    store.ensure_embedding("test", 8)
    vecs = _vectors(20, seed=1)
    store.save_document(NewDocument(title="V", source="", doc_type="md", content="v"),
                        [f"s{i}" for i in range(10)], _records(20), vecs)
    ids, _ = store.keyword_corpus()
    target = 7
    hits = store.vector_search(vecs[target], 5)
    assert hits[0][0] == ids[target] and abs(hits[0][1] - 1.0) < 1e-4
    exact = sorted((float(vecs[i] @ vecs[target]) for i in range(20)), reverse=True)[:5]
    assert np.allclose([s for _, s in hits], exact, atol=1e-4)


def test_versions_and_no_op(store_factory: StoreFactory) -> None:
    store = store_factory()
    store.ensure_embedding("test", 8)
    v1 = store.save_document(NewDocument(title="T", source="a.md", doc_type="md", content="one"), ["s"], _records(1), _vectors(1))
    same = store.save_document(NewDocument(title="T", source="a.md", doc_type="md", content="one"), ["s"], _records(1), _vectors(1))
    assert same.status == "unchanged" and store.chunk_count() == 1
    v2 = store.save_document(NewDocument(title="T", source="a.md", doc_type="md", content="two"), ["s", "t"], _records(3), _vectors(3))
    assert v2.status == "new_version" and v2.document.id == v1.document.id and v2.document.version == 2
    assert store.chunk_count() == 3


def test_failed_write_is_rolled_back(store_factory: StoreFactory) -> None:
    store = store_factory()
    store.ensure_embedding("test", 8)
    with pytest.raises(ValueError, match="vectors"):
        store.save_document(NewDocument(title="Bad", source="", doc_type="md", content="x"), ["s"], _records(3), _vectors(2))
    assert store.list_documents() == [] and store.chunk_count() == 0


def test_second_connection_sees_writes_and_engine_loaded(store_factory: StoreFactory) -> None:
    a, b = store_factory(), store_factory()
    engine_a, engine_b = RagEngine(a, HashingEmbedder(64)), RagEngine(b, HashingEmbedder(64))
    assert not engine_b.loaded
    doc = engine_a.ingest_text("Rail", "# 高铁\n\n京沪高铁全长一千三百一十八公里。").document
    assert engine_b.loaded
    assert engine_b.search("京沪高铁", 3)[0].document_id == doc.id
    engine_b.delete_document(doc.id)
    assert not engine_a.loaded and engine_a.search("京沪高铁", 3) == []


def test_concurrent_identical_writes_store_once(store_factory: StoreFactory) -> None:
    import threading

    stores = [store_factory() for _ in range(3)]
    engines = [RagEngine(s, HashingEmbedder(64)) for s in stores]
    engines[0].ingest_text("warm", "warm up the schema")
    barrier = threading.Barrier(3)
    results: list[str] = []

    def write(e: RagEngine) -> None:
        barrier.wait()
        results.append(e.ingest_text("Same", "identical content written by three writers").status)

    threads = [threading.Thread(target=write, args=(e,)) for e in engines]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results).count("created") == 1
    assert [d.title for d in engines[0].list_documents()].count("Same") == 1


def test_two_connections_set_up_a_fresh_store_at_once(store_factory: StoreFactory) -> None:
    import threading

    a, b = store_factory(), store_factory()
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def first_ingest(store: Any) -> None:
        start.wait()
        try:
            store.ensure_embedding("hashing:32", 32)
        except BaseException as exc:  # what we look for: one of them failing
            errors.append(exc)

    threads = [threading.Thread(target=first_ingest, args=(s,)) for s in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_owners_scope_what_each_user_sees(store_factory: StoreFactory) -> None:
    store = store_factory()
    store.ensure_embedding("test", 8)
    a = store.save_document(NewDocument(title="A", source="a.md", doc_type="md", content="a"), ["a"], _records(1),
                            _vectors(1)).document.id
    b = store.save_document(NewDocument(title="B", source="b.md", doc_type="md", content="b"), ["b"], _records(1),
                            _vectors(1, seed=1)).document.id
    store.add_owner(a, "alice")
    store.add_owner(a, "alice")
    assert store.owned_by("alice") == {a} and store.hidden_from("bob") == {a} and store.hidden_from("alice") == set()
    store.add_owner(a, "bob")
    assert store.hidden_from("bob") == set() and store.release(a, "bob") is False and store.release(a, "alice") is True
    store.add_owner(b, "bob")
    assert store.delete_document(b) and store.owned_by("bob") == set()


def test_nul_characters_in_a_document_are_dropped_not_fatal(store_factory: StoreFactory) -> None:
    """PostgreSQL text cannot hold NUL: a title, source, summary or text with one is stored without it."""
    engine = RagEngine(store_factory(), HashingEmbedder(dim=8))
    result = engine.ingest_text("Nul\x00 title", "# Nul\x00 title\n\nbody\x00 text here", source="a\x00.md",
                                summary="sum\x00mary")
    stored = engine.store.get_document(result.document.id)
    assert (stored.title, stored.source, stored.summary) == ("Nul title", "a.md", "summary")
    assert "\x00" not in (stored.content or "") and "body text here" in (stored.content or "")
    assert [h.title for h in engine.search("body text", 1)] == ["Nul title"]


def test_the_same_text_owned_by_two_users_is_two_documents(store_factory: StoreFactory) -> None:
    from saber.rag.documents import content_hash

    engine = RagEngine(store_factory(), HashingEmbedder(dim=8))
    text = "# Rota\n\nThe zebras are fed at seven."
    alice = engine.ingest_text("Rota", text, source="upload:alice/rota.md", owner="alice")
    bob = engine.ingest_text("Rota", text, source="upload:bob/zebras.md", owner="bob")
    assert (alice.status, bob.status) == ("created", "created") and alice.document.id != bob.document.id
    assert bob.document.source == "upload:bob/zebras.md" and engine.owned_by("bob") == {bob.document.id}
    assert engine.hidden_from("bob") == {alice.document.id} and engine.hidden_from("alice") == {bob.document.id}
    assert {d.content_hash for d in engine.list_documents(hidden=())} == {content_hash(text)}  # what the text hashes to
    for owner, own in (("alice", alice), ("bob", bob)):
        again = engine.ingest_text("Rota copy", text, source=f"upload:{owner}/copy.md", owner=owner)
        assert (again.status, again.document.id) == ("unchanged", own.document.id)
    newer = engine.ingest_text("Rota", "# Rota\n\nThe okapi is fed at noon.", source="upload:alice/rota.md",
                               owner="alice")
    assert (newer.status, newer.document.id) == ("new_version", alice.document.id)
    assert engine.get_document(bob.document.id).content == text and engine.owned_by("bob") == {bob.document.id}
    assert {h.document_id for h in engine.search("okapi noon", 5, hidden=engine.hidden_from("bob"))} == {bob.document.id}


def test_the_text_of_a_shared_or_earlier_stored_document_is_that_document(store_factory: StoreFactory) -> None:
    engine = RagEngine(store_factory(), HashingEmbedder(dim=8))
    shared = engine.ingest_text("Handbook", "Every animal is fed twice a day.", source="handbook.md").document.id
    same = engine.ingest_text("Copy", "Every animal is fed twice a day.", source="upload:alice/copy.md", owner="alice")
    assert (same.status, same.document.id) == ("unchanged", shared) and engine.owned_by("alice") == set()
    old = engine.ingest_text("Old", "Stored before owners keyed the hash.", source="upload:alice/old.md").document.id
    engine.add_owner(old, "alice")  # what an upload was before: the plain content hash, the owner beside it
    again = engine.ingest_text("Old", "Stored before owners keyed the hash.", source="upload:alice/old.md", owner="alice")
    assert (again.status, again.document.id) == ("unchanged", old)
    bobs = engine.ingest_text("Old", "Stored before owners keyed the hash.", source="upload:bob/old.md", owner="bob")
    assert bobs.status == "created" and engine.owned_by("bob") == {bobs.document.id} != {old}
    unindexed = engine.ingest_text("Draft", "A draft nobody indexed.", source="draft.md", index=False).document.id
    indexed = engine.ingest_text("Draft", "A draft nobody indexed.", source="upload:bob/draft.md", owner="bob")
    assert (indexed.status, indexed.document.id) == ("indexed", unindexed) and engine.hidden_from("carol") == {old, bobs.document.id}


def test_concurrent_identical_writes_of_one_owner_store_once(store_factory: StoreFactory) -> None:
    import threading

    engines = [RagEngine(store_factory(), HashingEmbedder(64)) for _ in range(3)]
    engines[0].ingest_text("warm", "warm up the schema")
    barrier = threading.Barrier(3)
    results: list[tuple[str, str]] = []

    def write(e: RagEngine) -> None:
        barrier.wait()
        r = e.ingest_text("Same", "identical content written by three writers", source="upload:alice/same.md",
                          owner="alice")
        results.append((r.status, r.document.id))

    threads = [threading.Thread(target=write, args=(e,)) for e in engines]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(s for s, _ in results).count("created") == 1 and len({d for _, d in results}) == 1
    assert engines[0].owned_by("alice") == {results[0][1]}
