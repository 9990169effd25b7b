"""The documents API answers an upload once it is keyword-searchable and says how far its vectors are;
the server fills vectors in the background, including those an earlier process left."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
from server_helpers import LiveServer

from saber.rag import HashingEmbedder, RagEngine, SQLiteStore

NOTES = "# Cache\n\n" + "Cache-Control max-age sets how long a response stays fresh. " * 12


def test_upload_is_keyword_searchable_at_once_and_its_vectors_follow(serve: Callable[..., LiveServer]) -> None:
    live = serve()
    engine = live.agent.services.knowledge
    assert engine is not None and engine._filler is not None  # started with the server
    assert engine._filler.stop(30)  # hold the vectors back to see the first state
    with httpx.Client(base_url=live.url, timeout=60) as client:
        r = client.post("/api/documents", files=[("files", ("cache.md", NOTES.encode(), "text/markdown"))])
        assert r.status_code == 201, r.text
        [doc] = r.json()
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
