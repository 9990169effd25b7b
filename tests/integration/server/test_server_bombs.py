"""Issue 28, item 3, over HTTP: an uploaded decompression bomb is refused with a 413 naming the
limit, and an upload whose client hangs up mid-ingest stops reading; neither leaves anything in
the knowledge base or on disk."""

from __future__ import annotations

import importlib.util
import io
import logging
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import httpx
import pytest
from server_helpers import LiveServer


def _bombs() -> ModuleType:
    path = Path(__file__).parents[2] / "unit" / "rag" / "bombs.py"  # the builders the loader tests use
    spec = importlib.util.spec_from_file_location("saber_test_bombs", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bombs = _bombs()


def _nothing_left(live: LiveServer) -> None:
    uploads = live.settings.home / "uploads"
    assert not uploads.exists() or list(uploads.iterdir()) == []
    assert httpx.get(f"{live.url}/api/documents", timeout=30).json() == []


def test_an_uploaded_docx_bomb_is_refused_naming_the_limit(serve: Callable[..., LiveServer], tmp_path: Path) -> None:
    live = serve()
    bomb = bombs.docx_bomb(tmp_path / "report.docx", 120)
    r = httpx.post(f"{live.url}/api/documents", files=[("files", ("report.docx", bomb.read_bytes()))], timeout=60)
    assert r.status_code == 413, r.text
    assert r.json()["error"]["code"] == "too_large"
    assert r.json()["error"]["message"].startswith("report.docx: word/document.xml inflates ")
    assert "(rag.max_ratio)" in r.json()["error"]["message"]
    _nothing_left(live)


@pytest.fixture
def ingest_log() -> Iterator[io.StringIO]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    loggers = [logging.getLogger("saber.server.routes.documents"), logging.getLogger("saber.rag.loaders")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    yield out
    for logger, level in zip(loggers, levels, strict=True):
        logger.removeHandler(handler)
        logger.setLevel(level)


def _wait_for(condition: Callable[[], object], what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"never saw {what}")


def test_an_upload_whose_client_hangs_up_stops_reading_and_stores_nothing(
        serve: Callable[..., LiveServer], tmp_path: Path, ingest_log: io.StringIO) -> None:
    pages = 20_000  # about a minute to read whole
    pdf = bombs.many_pages_pdf(tmp_path / "book.pdf", pages).read_bytes()
    live = serve()
    boundary = uuid.uuid4().hex
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"book.pdf\"\r\n"
            "Content-Type: application/pdf\r\n\r\n").encode() + pdf + f"\r\n--{boundary}--\r\n".encode()
    host, port = live.url.removeprefix("http://").split(":")
    uploads = live.settings.home / "uploads"
    with socket.create_connection((host, int(port))) as client:
        client.sendall(f"POST /api/documents HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Length: {len(body)}\r\n"
                       f"Content-Type: multipart/form-data; boundary={boundary}\r\n\r\n".encode() + body)
        _wait_for(lambda: f"read 1000 of {pages} pages" in ingest_log.getvalue(), "the reading under way")
    # the client has hung up while the server reads the file
    _wait_for(lambda: "the ingest was cancelled" in ingest_log.getvalue(), "the ingest stop")
    stopped = ingest_log.getvalue().split("book.pdf: the ingest was cancelled at page ")[1]
    page = int(stopped.split()[0])
    assert 1000 < page < pages, stopped
    _wait_for(lambda: not any(uploads.iterdir()), "the upload's removal")
    _nothing_left(live)
