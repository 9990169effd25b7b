"""The documents API answers an upload once it is keyword-searchable and says how far its vectors are;
the server fills vectors in the background, including those an earlier process left, and says why
when it cannot (an embeddings endpoint that refuses the key, or is down)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
from server_helpers import LiveServer

from saber.rag import HashingEmbedder, OpenAIEmbedder, RagEngine, SQLiteStore
from saber.rag.filler import ERROR_BACKOFF
from saber.testing import FakeOpenAIServer

NOTES = "# Cache\n\n" + "Cache-Control max-age sets how long a response stays fresh. " * 12


def test_upload_is_keyword_searchable_at_once_and_its_vectors_follow(serve: Callable[..., LiveServer]) -> None:
    live = serve()
    engine = live.agent.services.knowledge
    assert engine is not None and engine._filler is not None  # started with the server
    assert engine._filler.stop(30)  # hold the vectors back to see the first state
    with httpx.Client(base_url=live.url, timeout=60) as client:
        r = client.post("/api/documents", files=[("files", ("cache.md", NOTES.encode(), "text/markdown"))])
        assert r.status_code == 200, r.text
        [doc] = [f["document"] for f in r.json()["files"]]
        assert doc["indexed"] is True and doc["search"] == "keyword" and doc["embedded_chunks"] == 0
        assert [h.document_id for h in engine.search("max-age fresh", 3, mode="keyword")][:1] == [doc["id"]]
        engine.fill_vectors()
        [listed] = client.get("/api/documents").json()
        assert listed["search"] == "hybrid" and listed["embedded_chunks"] == listed["chunks"] == doc["chunks"]
        assert client.get(f"/api/documents/{doc['id']}").json()["search"] == "hybrid"


def test_the_server_fills_vectors_an_earlier_process_left(serve: Callable[..., LiveServer], tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    earlier = RagEngine(SQLiteStore(home / "saber.db"), HashingEmbedder(), background_vectors=False)
    left = earlier.ingest_text("Cache", NOTES, wait=False).document
    earlier.close()
    assert left.search == "keyword"
    live = serve(home=home)
    engine = live.agent.services.knowledge
    assert engine is not None and engine._filler is not None and engine._filler.wait_idle(60)
    assert engine.pending_count() == 0 and engine.get_document(left.id).search == "hybrid"


WRONG_KEY = "sk-wrong-key-0123456789"


def test_an_embedder_that_refuses_the_key_shows_as_failing_with_its_reason_until_it_works(
        serve: Callable[..., LiveServer]) -> None:
    with FakeOpenAIServer(embedding_dimensions=16, api_key="sk-right") as embeddings:
        embedder = OpenAIEmbedder(base_url=embeddings.base_url, model="text-embedding-3-small", api_key=WRONG_KEY, dim=16)
        live = serve(embedder=embedder)
        engine = live.agent.services.knowledge
        assert engine is not None and engine._filler is not None
        reason = (f"embedder openai:text-embedding-3-small at {embeddings.base_url}/embeddings answered 401: "
                  "Incorrect API key provided (check embedding.api_key)")
        with httpx.Client(base_url=live.url, timeout=60) as client:
            r = client.post("/api/documents", files=[("files", ("cache.md", NOTES.encode(), "text/markdown"))])
            assert r.status_code == 200, r.text
            [doc] = [f["document"] for f in r.json()["files"]]
            assert doc["search"] == "keyword" and doc["embedded_chunks"] == 0 and doc["vectors"]["state"] in (
                "filling", "failing")
            assert engine._filler.wait_attempt(60)  # the background fill tried, and the endpoint said 401
            assert [h.document_id for h in engine.search("max-age fresh", 3, mode="keyword")][:1] == [doc["id"]]
            listed = client.get("/api/documents")
            [pending] = listed.json()
            vectors = pending["vectors"]
            assert vectors["state"] == "failing" and vectors["error"] == reason
            assert 0 <= vectors["retry_in_s"] <= ERROR_BACKOFF and vectors["failed_at"]
            assert {k: pending[k] for k in ("search", "embedded_chunks", "chunks", "indexed")} == {
                "search": "keyword", "embedded_chunks": 0, "chunks": doc["chunks"], "indexed": True}
            shown = client.get(f"/api/documents/{doc['id']}")
            assert shown.json()["vectors"]["error"] == reason and shown.json()["text"].startswith("# Cache")
            assert WRONG_KEY not in listed.text + shown.text
            status = client.get("/api/status").json()["vectors"]  # the server's own view, beside the documents'
            assert status["state"] == "failing" and status["error"] == reason

            embeddings.api_key = WRONG_KEY  # the endpoint takes the key now: the next fill works
            assert engine.fill_vectors() == doc["chunks"]
            [done] = client.get("/api/documents").json()
            assert done["search"] == "hybrid" and done["vectors"] is None
            assert client.get(f"/api/documents/{doc['id']}").json()["vectors"] is None
            assert client.get("/api/status").json()["vectors"] is None  # nothing pending


def test_an_embedder_that_is_down_fails_the_fill_or_with_no_known_vector_size_the_upload(
        serve: Callable[..., LiveServer], refused_url: str, tmp_path: Path) -> None:
    sized = serve(embedder=OpenAIEmbedder(base_url=f"{refused_url}/v1", model="m", dim=16))
    engine = sized.agent.services.knowledge
    assert engine is not None and engine._filler is not None
    with httpx.Client(base_url=sized.url, timeout=60) as client:
        r = client.post("/api/documents", files=[("files", ("cache.md", NOTES.encode(), "text/markdown"))])
        assert r.status_code == 200, r.text
        assert engine._filler.wait_attempt(60)
        [doc] = client.get("/api/documents").json()
        assert doc["search"] == "keyword" and doc["vectors"]["state"] == "failing"
        assert doc["vectors"]["error"] == f"embedder openai:m at {refused_url}/v1/embeddings unreachable: connection refused"

    unsized = serve(embedder=OpenAIEmbedder(base_url=f"{refused_url}/v1", model="m"), home=tmp_path / "other")
    with httpx.Client(base_url=unsized.url, timeout=60) as client:
        r = client.post("/api/documents", files=[("files", ("cache.md", NOTES.encode(), "text/markdown"))])
        assert r.status_code == 503, r.text
        error = r.json()["error"]
        assert error["code"] == "embedder_unavailable"
        assert error["message"] == (f"cache.md: not stored: embedder openai:m at {refused_url}/v1/embeddings "
                                    "unreachable: connection refused (asking its vector size; set embedding_dim to "
                                    "store documents keyword-searchable while the endpoint is down)")
        assert client.get("/api/documents").json() == []
