"""Another site's page, in a real browser, cannot drive the server (#28 item 1).

Chromium resolves ``evil.example`` to 127.0.0.1 (``--host-resolver-rules``), standing for the
attacker's DNS. A page on evil.example sends a cross-site multipart upload (a "simple" request: no
preflight); a rebound page (its name now resolving to the server) fetches the API as same-origin.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from server_helpers import LiveServer

from conftest import CHROMIUM, CHROMIUM_ARGS

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

PLANT = """
const form = new FormData();
form.append("files", new Blob(["# Planted\\n\\nThe admin password is hunter2."], {type: "text/markdown"}), "planted.md");
"""

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "upgrade"}


class AttackerSite:
    """The attacker's web server on evil.example: ``/`` is its page; with ``rebound_to`` set every
    other path reaches that server, Host header untouched, as when the name is rebound to it."""

    def __init__(self, page: str, rebound_to: str | None = None) -> None:
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/":
                    self._answer(200, {"content-type": "text/html"}, site.page.encode())
                else:
                    self._forward()

            def do_POST(self) -> None:
                self._forward()

            def _forward(self) -> None:
                if site.rebound_to is None:
                    self._answer(404, {}, b"")
                    return
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                r = httpx.request(self.command, site.rebound_to + self.path, headers=headers, content=body, timeout=30)
                self._answer(r.status_code, {"content-type": r.headers.get("content-type", "")}, r.content)

            def _answer(self, status: int, headers: dict[str, str], body: bytes) -> None:
                self.send_response(status)
                for key, value in {**headers, "content-length": str(len(body))}.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.page, self.rebound_to = page, rebound_to
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://evil.example:{self.server.server_address[1]}/"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def evil_browser() -> Iterator[Any]:
    """A chromium for which evil.example is 127.0.0.1."""
    from playwright import sync_api as playwright_sync

    with playwright_sync.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM,
                                    args=[*CHROMIUM_ARGS, "--host-resolver-rules=MAP evil.example 127.0.0.1"])
        yield browser
        browser.close()


@pytest.fixture
def attacker() -> Iterator[Callable[..., AttackerSite]]:
    sites: list[AttackerSite] = []

    def start(page: str, rebound_to: str | None = None) -> AttackerSite:
        sites.append(AttackerSite(page, rebound_to))
        return sites[-1]

    yield start
    for site in sites:
        site.stop()


def access_statuses(caplog: pytest.LogCaptureFixture, route: str) -> list[str]:
    lines = [r.getMessage() for r in caplog.records if r.name == "saber.server.access"]
    return [line.split("status=")[1].split()[0] for line in lines if f"route={route} " in line]


def test_a_cross_site_page_cannot_plant_a_document_with_a_multipart_upload(
        live: Any, evil_browser: Any, attacker: Callable[..., AttackerSite], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="saber.server.access")
    server: LiveServer = live()
    page_script = f"""<script>{PLANT}
fetch("{server.url}/api/documents", {{method: "POST", mode: "no-cors", body: form}})
  .then(() => document.title = "sent", (e) => document.title = "failed " + e);
</script>"""
    site = attacker(page_script)
    page = evil_browser.new_page()
    page.goto(site.url)
    page.wait_for_function("document.title === 'sent'")
    assert access_statuses(caplog, "/api/documents") == ["403"]  # it reached the server, which refused it
    assert httpx.get(server.url + "/api/documents", timeout=30).json() == []


def test_a_rebound_page_can_neither_read_nor_write_as_same_origin(
        live: Any, evil_browser: Any, attacker: Callable[..., AttackerSite]) -> None:
    server: LiveServer = live()
    page_script = f"""<script>{PLANT}
async function attack() {{
  const upload = await fetch("/api/documents", {{method: "POST", body: form}});
  const status = await fetch("/api/status");
  document.body.dataset.result = JSON.stringify({{upload: upload.status, status: status.status,
    code: (await status.json()).error?.code ?? "read by the page"}});
}}
attack().catch((e) => document.body.dataset.result = "failed " + e);
</script>"""
    site = attacker(page_script, rebound_to=server.url)
    page = evil_browser.new_page()
    page.goto(site.url)
    page.wait_for_function("document.body.dataset.result !== undefined")
    assert page.evaluate("document.body.dataset.result") == '{"upload":403,"status":403,"code":"host_not_allowed"}'
    assert httpx.get(server.url + "/api/documents", timeout=30).json() == []
