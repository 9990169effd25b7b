"""Documents, memory, tools and status over HTTP, each user seeing only their own."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
from server_helpers import LiveServer, make_agent, settings_for

from saber.testing import FakeOpenAIServer

ALICE = {"Authorization": "Bearer key-alice"}
BOB = {"Authorization": "Bearer key-bob"}


def test_documents_upload_list_read_delete_per_user(serve: Callable[..., LiveServer]) -> None:
    live = serve(keys=True)
    with httpx.Client(base_url=live.url, timeout=60) as client:
        files = [("files", ("茶.md", "# 绿茶\n\n绿茶不发酵，红茶全发酵。".encode(), "text/markdown")),
                 ("files", ("notes [draft].txt", b"Cache-Control max-age sets freshness.", "text/plain"))]
        r = client.post("/api/documents", files=files, headers=ALICE)
        assert r.status_code == 200, r.text
        assert [(f["file"], f["status"]) for f in r.json()["files"]] == [("茶.md", "added"), ("notes [draft].txt", "added")]
        uploaded = [f["document"] for f in r.json()["files"]]
        assert all(d["indexed"] for d in uploaded)
        assert [d["source"] for d in uploaded] == ["茶.md", "notes [draft].txt"], "the name, not a path on the server"
        assert [d["title"] for d in uploaded] == ["绿茶", "notes [draft]"], "its heading, else the name as uploaded"
        ids = sorted(d["id"] for d in uploaded)
        assert sorted(d["id"] for d in client.get("/api/documents", headers=ALICE).json()) == ids
        assert client.get("/api/documents", headers=BOB).json() == []
        assert client.get(f"/api/documents/{ids[0]}", headers=BOB).status_code == 404
        assert client.delete(f"/api/documents/{ids[0]}", headers=BOB).status_code == 404
        assert client.get(f"/api/documents/{ids[0]}", headers=ALICE).json()["id"] == ids[0]
        assert client.delete(f"/api/documents/{ids[0]}", headers=ALICE).json() == {"deleted": True}
        assert [d["id"] for d in client.get("/api/documents", headers=ALICE).json()] == ids[1:]
        assert client.get(f"/api/documents/{ids[0]}", headers=ALICE).status_code == 404
        status = client.get("/api/status", headers=ALICE).json()
        assert status["documents"] == 1 and status["chunks"] >= 1 and status["auth"] is True
        assert "get_time" in status["tools"] and status["stores"]["database"] == "sqlite"
        assert client.post("/api/documents", headers=ALICE).status_code == 422


def test_memory_is_the_callers_own_and_can_be_forgotten(serve: Callable[..., LiveServer],
                                                        fake_llm: FakeOpenAIServer) -> None:
    fake_llm.queue("hi alice", "hi bob")
    live = serve(keys=True)
    with httpx.Client(base_url=live.url, timeout=60) as client:
        client.post("/api/chat", json={"message": "我喜欢简洁的回答，我在上海", "mode": "chat"}, headers=ALICE)
        client.post("/api/chat", json={"message": "hello", "mode": "chat"}, headers=BOB)
        alice = client.get("/api/memory", headers=ALICE).json()
        assert alice["user_id"] == "alice"
        assert [m["content"] for m in alice["history"]] == ["我喜欢简洁的回答，我在上海", "hi alice"]
        assert "hello" not in str(alice)
        assert client.delete("/api/memory", headers=ALICE).json() == {"deleted": True}
        assert client.get("/api/memory", headers=ALICE).json()["history"] == []
        assert len(client.get("/api/memory", headers=BOB).json()["history"]) == 2


def test_tools_and_local_mode_users(serve: Callable[..., LiveServer], fake_llm: FakeOpenAIServer) -> None:
    fake_llm.queue("ok")
    live = serve()
    with httpx.Client(base_url=live.url, timeout=60) as client:
        tools = {t["name"]: t for t in client.get("/api/tools").json()}
        assert "timezone" in [p["name"] for p in tools["get_time"]["parameters"]]
        client.post("/api/chat", json={"message": "hello", "mode": "chat", "user_id": "u7"})
        assert len(client.get("/api/memory", params={"user_id": "u7"}).json()["history"]) == 2
        assert client.get("/api/memory").json()["history"] == []
        assert client.get("/api/status").json()["auth"] is False


async def test_agent_as_an_async_context_manager(tmp_path: Path) -> None:
    settings = settings_for(tmp_path / "home")
    async with make_agent(settings, None) as agent:
        answer = await agent.ask("现在几点 in UTC", user_id="u1")
        assert answer.mode == "tool" and "UTC" in answer.answer
    from saber.db import database

    # closed on leaving the block: every store let go of the database, so its pool is gone
    assert not any(key.endswith(str(settings.sqlite_path)) for key in database._open)
