"""Memory's merge and relevance thresholds follow the embedder: measured for the bundled E5 model,
calibrated on first use for any other (the default USE model too), overridden by settings."""

from __future__ import annotations

from pathlib import Path

from saber.agent.memory import MemoryService
from saber.agent.memory.longterm import LongTermMemory
from saber.agent.memory.sqlite_store import SQLiteMemoryStore
from saber.agent.memory.thresholds import DIFFERENT_FACTS, SAME_FACT, calibrate
from saber.config import Settings
from saber.rag.embedder import Embedder, HashingEmbedder, LocalE5Embedder


def test_the_e5_model_uses_its_measured_thresholds(sqlite_store: SQLiteMemoryStore) -> None:
    memory = LongTermMemory(sqlite_store, LocalE5Embedder())
    assert (memory.thresholds.merge, memory.thresholds.min_relevance, memory.thresholds.source) == (0.97, 0.03,
                                                                                                    "measured")


def test_calibration_on_the_e5_model_lands_near_the_measured_merge(sqlite_store: SQLiteMemoryStore) -> None:
    """The calibration procedure, run on the model whose values were measured by hand, agrees."""
    e5 = LocalE5Embedder()
    found = calibrate(e5, LongTermMemory(sqlite_store, e5).baseline)
    assert 0.95 <= found.merge <= 0.99 and found.source == "calibrated"


def test_the_default_model_is_calibrated_and_separates_its_probes(sqlite_store: SQLiteMemoryStore,
                                                                   embedder: Embedder) -> None:
    memory = LongTermMemory(sqlite_store, embedder)
    found = memory.thresholds
    assert found.source == "calibrated"
    vectors = embedder.embed_documents([t for pair in (*SAME_FACT, *DIFFERENT_FACTS) for t in pair])
    cosines = [float(vectors[2 * i] @ vectors[2 * i + 1]) for i in range(len(SAME_FACT) + len(DIFFERENT_FACTS))]
    assert min(cosines[:len(SAME_FACT)]) > found.merge > max(cosines[len(SAME_FACT):])  # it tells them apart
    memory.add("u1", "I like tea")
    assert memory.add("u1", "I love tea").action == "merged"
    assert memory.add("u1", "I like coffee").action == "stored"


def test_another_embedder_is_calibrated_and_separates_its_probes(sqlite_store: SQLiteMemoryStore) -> None:
    hashing = HashingEmbedder()
    memory = LongTermMemory(sqlite_store, hashing)
    found = memory.thresholds
    assert found.source == "calibrated" and found.merge != 0.97
    vectors = hashing.embed_documents([t for pair in DIFFERENT_FACTS for t in pair])
    assert all(float(vectors[2 * i] @ vectors[2 * i + 1]) < found.merge for i in range(len(DIFFERENT_FACTS)))
    memory.add("u1", "I like tea")
    assert memory.add("u1", "I like coffee").action == "stored"  # a different fact is never merged
    assert len(SAME_FACT) >= 5


def test_settings_override_the_embedder_thresholds(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, memory={"merge_threshold": 0.5, "min_relevance": 0.2})
    service = MemoryService.from_settings(settings, embedder=HashingEmbedder())
    try:
        assert (service.longterm.thresholds.merge, service.longterm.thresholds.min_relevance) == (0.5, 0.2)
        assert service.longterm.thresholds.source == "settings"
    finally:
        service.close()


async def test_recall_keeps_out_what_the_embedder_finds_unrelated(tmp_path: Path) -> None:
    service = MemoryService(SQLiteMemoryStore(tmp_path / "m.db"), HashingEmbedder())
    try:
        await service.remember("u1", "I am allergic to peanuts")
        everything = await service.recall("u1", "Write a Python function that sorts a list")
        relevant = await service.recall("u1", "Write a Python function that sorts a list", relevant_only=True)
        assert len(everything) == 1 and relevant == []
        assert [m.text for m in await service.recall("u1", "peanuts allergic?", relevant_only=True)] == [
            "I am allergic to peanuts"]
    finally:
        service.close()
