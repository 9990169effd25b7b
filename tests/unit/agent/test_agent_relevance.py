"""The router's knowledge-base evidence: documents still waiting for vectors count, other users' never."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from saber.agent.relevance import RelevanceGate
from saber.rag import HashingEmbedder, RagEngine, SQLiteStore
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
