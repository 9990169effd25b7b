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
        settings = Settings(home=tmp_path,
                            embedding={"provider": "openai", "base_url": server.base_url, "model": "m"})
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


def test_errors_name_the_embedder_and_endpoint_and_never_a_credential(refused_url: str) -> None:
    key = "sk-wrong-key-0123456789"
    with FakeOpenAIServer(embedding_dimensions=16, api_key="sk-right") as server:
        emb = OpenAIEmbedder(base_url=server.base_url.replace("http://", "http://alice:hunter2@"),
                             model="text-embedding-3-small", api_key=key, dim=16)
        with pytest.raises(EmbeddingError) as refused:
            emb.embed_documents(["x"])
        message = str(refused.value)
        assert message == (f"embedder openai:text-embedding-3-small at {server.base_url}/embeddings answered 401: "
                           "Incorrect API key provided (check embedding.api_key)")
        assert not refused.value.retryable and "hunter2" not in message and "alice" not in message
        emb.close()
    with FakeOpenAIServer(embedding_dimensions=16) as server:
        server.queue_embeddings(FakeReply.fail(403, f"key {key} is not allowed here"))  # a server that echoes it
        emb = OpenAIEmbedder(base_url=server.base_url, model="m", api_key=key, dim=16)
        with pytest.raises(EmbeddingError) as echoed:
            emb.embed_documents(["x"])
        assert str(echoed.value).endswith("answered 403: key *** is not allowed here (check embedding.api_key)")
        emb.close()
    dead = OpenAIEmbedder(base_url=refused_url + "/v1", model="m", api_key=key)
    with pytest.raises(EmbeddingError) as unreachable:
        _ = dead.dim  # the vector size is asked of the endpoint: it cannot answer
    assert str(unreachable.value) == (f"embedder openai:m at {refused_url}/v1/embeddings unreachable: connection "
                                      "refused (asking its vector size; set embedding_dim to store documents "
                                      "keyword-searchable while the endpoint is down)")
    assert unreachable.value.retryable
    dead.close()


def test_a_failed_fill_is_recorded_for_every_process_until_a_fill_works(tmp_path: Path) -> None:
    with FakeOpenAIServer(embedding_dimensions=16, api_key="sk-right") as server:
        wrong = OpenAIEmbedder(base_url=server.base_url, model="m", api_key="sk-wrong-0123456789", dim=16)
        engine = RagEngine(SQLiteStore(tmp_path / "s.db"), wrong, background_vectors=False)
        doc = engine.ingest_text("Doc", "Otters hold hands while they sleep.", wait=False).document
        assert engine.vector_status().state == "stopped"  # nothing tried yet, no filler here
        with pytest.raises(EmbeddingError, match="answered 401"):
            engine.fill_vectors()
        other = RagEngine(SQLiteStore(tmp_path / "s.db"), wrong)  # another process: sees it from the store
        status = other.vector_status()
        assert status.state == "failing" and status.retry_in_s is None and status.failed_at is not None
        assert status.error == (f"embedder openai:m at {server.base_url}/embeddings answered 401: "
                                "Incorrect API key provided (check embedding.api_key)")
        assert "sk-wrong" not in str(status.to_dict())
        right = RagEngine(SQLiteStore(tmp_path / "s.db"),
                          OpenAIEmbedder(base_url=server.base_url, model="m", api_key="sk-right", dim=16))
        assert right.fill_vectors() == 1 and right.get_document(doc.id).search == "hybrid"
        assert other.vector_status().state == "stopped" and other.vector_status().error is None
        for e in (engine, other, right):
            e.close()
