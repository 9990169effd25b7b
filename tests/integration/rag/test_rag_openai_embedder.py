from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from saber.config import Settings
from saber.rag import OpenAIEmbedder, RagEngine, SQLiteStore, embedder_from_settings
from saber.rag.documents import EmbeddingError
from saber.testing.fake_openai import FakeOpenAIServer, FakeReply


def test_batches_normalises_and_probes_dimension() -> None:
    with FakeOpenAIServer(embedding_dimensions=48, api_key="sk-test") as server:
        emb = OpenAIEmbedder(base_url=server.base_url, model="text-embedding-3-small", api_key="sk-test", batch_size=3)
        assert emb.dim == 48
        vectors = emb.embed_documents([f"text {i}" for i in range(7)])
        assert vectors.shape == (7, 48) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        batches = [r for r in server.requests if r.path.endswith("/embeddings")]
        assert [len(r.body["input"]) for r in batches] == [1, 3, 3, 1]  # probe, then batches of 3
        assert all(r.body["model"] == "text-embedding-3-small" for r in batches)
        assert np.allclose(emb.embed_query("text 2"), vectors[2], atol=1e-6)
        emb.close()


def test_engine_over_openai_embeddings_from_settings(tmp_path: Path) -> None:
    with FakeOpenAIServer(embedding_dimensions=32) as server:
        settings = Settings(home=tmp_path, embedding_provider="openai", embedding_base_url=server.base_url,
                            embedding_model="m")
        engine = RagEngine(SQLiteStore(tmp_path / "saber.db"), embedder_from_settings(settings))
        result = engine.ingest_text("Doc", "Exact text that will be embedded.")
        assert result.chunks == 1 and engine.loaded
        engine.close()


def test_endpoint_errors_are_clear(tmp_path: Path) -> None:
    with FakeOpenAIServer(embedding_dimensions=16) as server:
        url = server.base_url
        server.queue_embeddings(FakeReply.fail(500, "overloaded"))
        emb = OpenAIEmbedder(base_url=server.base_url, model="m", dim=16)
        with pytest.raises(EmbeddingError, match="answered 500"):
            emb.embed_documents(["x"])
        engine = RagEngine(SQLiteStore(tmp_path / "s.db"), emb)
        server.queue_embeddings(FakeReply.fail(401, "bad key"))
        with pytest.raises(EmbeddingError, match="401"):
            engine.ingest_text("Doc", "content")
        [doc] = engine.list_documents()  # kept, keyword-searchable, its vector pending
        assert doc.search == "keyword" and engine.pending_count() == 1
        engine.close()
    gone = OpenAIEmbedder(base_url=url, model="m", dim=16, timeout=2)
    with pytest.raises(EmbeddingError, match="unreachable"):
        gone.embed_query("x")
    gone.close()
