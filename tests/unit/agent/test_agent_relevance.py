"""The router's knowledge-base evidence: documents still waiting for vectors count, other users' never."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from saber.agent.relevance import RelevanceGate, judge_for
from saber.rag import HashingEmbedder, RagEngine, SQLiteStore
from saber.rag.embedder import Vectors
from saber.rag.scope import knowledge_scope

FALCON = "The Falcon project launches on 12 March. Priya Raman runs the server room of the Falcon project."


@pytest.fixture
def pending_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RagEngine]:
    """An engine whose ingests stay keyword-only: no vector is filled while the test runs."""
    engine = RagEngine(SQLiteStore(tmp_path / "saber.db"), HashingEmbedder(256))
    monkeypatch.setattr(engine, "fill_in_background", lambda: None)
    yield engine
    engine.close()


def test_a_document_without_vectors_yet_is_relevant_to_a_question_about_it(pending_engine: RagEngine) -> None:
    pending_engine.ingest_text("Falcon", FALCON, wait=False)
    assert pending_engine.pending_count() > 0 and pending_engine.search("Falcon launch", 1, mode="vector") == []
    gate = RelevanceGate(pending_engine)
    about = gate.evidence("When does the Falcon project launch?")
    assert about.best >= about.threshold and about.title == "Falcon"
    other = gate.evidence("how do I bake sourdough bread")
    assert other.best < other.threshold


def test_another_users_document_is_no_evidence(pending_engine: RagEngine) -> None:
    doc = pending_engine.ingest_text("Falcon", FALCON, wait=False).document.id
    pending_engine.fill_vectors()
    pending_engine.add_owner(doc, "alice")
    gate = RelevanceGate(pending_engine)
    with knowledge_scope("bob", isolated=True):
        seen_by_bob = gate.evidence("When does the Falcon project launch?")
    with knowledge_scope("alice", isolated=True):
        seen_by_alice = gate.evidence("When does the Falcon project launch?")
    assert seen_by_bob.title is None and seen_by_bob.best < seen_by_bob.threshold
    assert seen_by_alice.title == "Falcon" and seen_by_alice.best >= seen_by_alice.threshold


class CountingJudge(HashingEmbedder):
    """A judge that records what it embedded (the gate must score with it, and once per chunk)."""

    name = "hashing:judge"

    def __init__(self) -> None:
        super().__init__(256)
        self.documents: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        self.documents += list(texts)
        return super().embed_documents(texts)


def test_a_judge_scores_the_passages_the_engine_found_each_once(tmp_path: Path) -> None:
    engine = RagEngine(SQLiteStore(tmp_path / "saber.db"), HashingEmbedder(64))
    engine.ingest_text("Falcon", FALCON)
    judge = CountingJudge()
    gate = RelevanceGate(engine, judge=judge, min_relevance=0.05)
    about = gate.evidence("When does the Falcon project launch?")
    assert about.title == "Falcon" and about.best >= about.threshold
    judged = [t for t in judge.documents if t.startswith("Falcon\n")]
    assert judged == [f"Falcon\n{FALCON}"]  # the chunk, titled as the store embeds it
    gate.evidence("Who runs the Falcon server room?")
    assert [t for t in judge.documents if t.startswith("Falcon\n")] == judged  # kept, not embedded again
    assert gate.relevant_hits("Falcon launch date", engine.search("Falcon launch date", 3))
    assert gate.evidence("how do I bake sourdough bread").best < about.threshold
    engine.close()


def test_the_default_embedder_is_judged_by_e5_and_others_by_themselves() -> None:
    from saber.rag.embedder import LocalE5Embedder, LocalUSEEmbedder

    assert isinstance(judge_for(LocalUSEEmbedder()), LocalE5Embedder)
    assert judge_for(LocalE5Embedder()) is None and judge_for(HashingEmbedder()) is None
