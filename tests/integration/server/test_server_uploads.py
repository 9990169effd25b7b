"""Uploads: each file stored or refused on its own, titled as the user named it, and no path of the
server's in what clients see."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from server_helpers import LiveServer, read_sse

ALICE = {"Authorization": "Bearer key-alice"}
BOB = {"Authorization": "Bearer key-bob"}


def md(name: str, text: str) -> tuple[str, tuple[str, bytes, str]]:
    return ("files", (name, text.encode(), "text/markdown"))


def leftovers(live: LiveServer) -> list[Path]:
    uploads = live.settings.home / "uploads"
    return sorted(uploads.iterdir()) if uploads.exists() else []


@pytest.mark.parametrize("name", ["..", ".", "a/..", "...", "_", "  "])
def test_a_name_with_nothing_usable_is_refused_and_leaves_nothing(serve: Callable[..., LiveServer], name: str) -> None:
    live = serve()
    r = httpx.post(f"{live.url}/api/documents", files=[md(name, "# Tea\n\nGreen tea.")], timeout=60)
    assert r.status_code == 422, r.text
    given = name.rpartition("/")[2].strip()
    assert r.json()["error"]["message"] == f"{given!r}: not a usable file name"
    assert r.json()["files"] == [{"file": given, "status": "failed", "error": f"{given!r}: not a usable file name",
                                  "document": None}]
    assert leftovers(live) == [] and httpx.get(f"{live.url}/api/documents").json() == []


def test_one_bad_file_does_not_stop_the_others(serve: Callable[..., LiveServer]) -> None:
    live = serve()
    files = [md("good1.md", "# One\n\nThe first good file."), ("files", ("empty.txt", b"", "text/plain")),
             md("good2.md", "# Two\n\nThe second good file.")]
    with httpx.Client(base_url=live.url, timeout=60) as client:
        r = client.post("/api/documents", files=files)
        assert r.status_code == 200, r.text
        results = r.json()["files"]
        assert [(f["file"], f["status"]) for f in results] == [("good1.md", "added"), ("empty.txt", "failed"),
                                                                 ("good2.md", "added")]
        assert results[1]["error"] == "empty.txt: no text found (the file is empty)" and results[1]["document"] is None
        assert sorted(d["title"] for d in client.get("/api/documents").json()) == ["One", "Two"]
        assert leftovers(live) == [], "a stored file's copy is gone once read, a failed one's too"

        r = client.post("/api/documents", files=[("files", ("empty.txt", b"", "text/plain")),
                                                 ("files", ("tool.exe", b"MZ", "application/octet-stream"))])
        assert r.status_code == 422, r.text
        assert r.json()["error"] == {"code": "invalid_document", "message": "empty.txt: no text found (the file is "
                                     "empty); tool.exe: unsupported file type .exe; supported: .txt, .md, .markdown, "
                                     ".html, .htm, .pdf, .docx"}
        assert [f["status"] for f in r.json()["files"]] == ["failed", "failed"]
        assert leftovers(live) == []


def test_titles_and_names_are_the_files_as_uploaded(serve: Callable[..., LiveServer]) -> None:
    live = serve()
    files = [("files", ("中文 笔记.txt", "绿茶不发酵。".encode(), "text/plain")),
             ("files", ("we[ird] (1).md", b"no heading here, only text", "text/markdown"))]
    with httpx.Client(base_url=live.url, timeout=60) as client:
        r = client.post("/api/documents", files=files)
        assert r.status_code == 200, r.text
        shown = [(f["document"]["title"], f["document"]["source"]) for f in r.json()["files"]]
        assert shown == [("中文 笔记", "中文 笔记.txt"), ("we[ird] (1)", "we[ird] (1).md")]
        assert sorted((d["title"], d["source"]) for d in client.get("/api/documents").json()) == sorted(shown)


def test_no_server_path_reaches_clients_and_a_reupload_is_a_new_version(serve: Callable[..., LiveServer]) -> None:
    live = serve(keys=True, model=False)
    home = str(live.settings.home)
    with httpx.Client(base_url=live.url, timeout=60) as client:
        first = client.post("/api/documents", files=[md("good1.md", "# Otters\n\nSea otters hold hands.")],
                            headers=ALICE).json()["files"][0]
        with client.stream("POST", "/api/chat/stream", headers=ALICE,
                           json={"message": "why do sea otters hold hands", "mode": "rag"}) as s:
            events = list(read_sse(s))
        [hits] = [e.data["hits"] for e in events if e.event == "rag_result"]
        assert hits and {h["source"] for h in hits} == {"upload:alice/good1.md"}
        assert home not in json.dumps([e.data for e in events]) and "/uploads/" not in json.dumps([e.data for e in events])

        again = client.post("/api/documents", files=[md("good1.md", "# Otters\n\nSea otters hold hands to sleep.")],
                            headers=ALICE).json()["files"][0]
        assert again["status"] == "updated" and again["document"]["id"] == first["document"]["id"]
        same = client.post("/api/documents", files=[md("good1.md", "# Otters\n\nSea otters hold hands to sleep.")],
                           headers=ALICE).json()["files"][0]
        assert same["status"] == "unchanged" and same["document"]["id"] == first["document"]["id"]
        bobs = client.post("/api/documents", files=[md("good1.md", "# Bob's otters\n\nOtters eat urchins.")],
                           headers=BOB).json()["files"][0]
        assert bobs["status"] == "added" and bobs["document"]["id"] != first["document"]["id"], "another user's name"
        assert [d["source"] for d in client.get("/api/documents", headers=ALICE).json()] == ["good1.md"]
