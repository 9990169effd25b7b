"""Browser tests: Debian's chromium driven by Playwright (never a browser download) against a real
uvicorn server on loopback, the model a FakeOpenAIServer answering from a script."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "integration" / "server"))

from server_helpers import LiveServer, make_agent, settings_for

from saber.llm.openai_compat import OpenAIChatModel
from saber.testing import FakeOpenAIServer
from saber.tools import tool

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def is_planner(body: dict[str, Any]) -> bool:
    system = " ".join(str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "system")
    return "task planner" in system or "任务规划器" in system


def is_profile(body: dict[str, Any]) -> bool:
    system = " ".join(str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "system")
    return "remember about the user" in system or "profile of the user" in system


class ModelScript:
    """The fake model's replies by kind: the plan, the answer, and "nothing" for memory extraction."""

    def __init__(self) -> None:
        self.plan = "[]"
        self.answer: Any = "Hello from the fake model."

    def __call__(self, body: dict[str, Any]) -> Any:
        if is_profile(body):
            return "[]" if "remember" in str(body) else "{}"
        if is_planner(body):
            return self.plan
        return self.answer


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright import sync_api as playwright_sync

    if not Path(CHROMIUM).exists():
        pytest.fail(f"chromium is not installed at {CHROMIUM}: .ci/run installs Debian's chromium package")
    with playwright_sync.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def script() -> ModelScript:
    return ModelScript()


@pytest.fixture
def live(tmp_path: Path, script: ModelScript) -> Iterator[Callable[..., LiveServer]]:
    """``live(tools=[...], keys=False, embedder=None)`` starts ``create_app`` on loopback with the scripted model."""
    servers: list[LiveServer] = []
    fakes: list[FakeOpenAIServer] = []

    def start(**kwargs: Any) -> LiveServer:
        fake = FakeOpenAIServer([script] * 200).start()
        fakes.append(fake)
        agent_kwargs = {k: kwargs.pop(k) for k in ("tools", "builtin", "embedder") if k in kwargs}
        settings = settings_for(tmp_path / "home", **kwargs)
        model = OpenAIChatModel(fake.model, base_url=fake.base_url, api_key="k")
        server = LiveServer(make_agent(settings, model, **agent_kwargs), settings).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
    for fake in fakes:
        fake.stop()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 860}, locale="en-US")
    page = context.new_page()
    errors: list[str] = []
    console: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda message: message.type == "error" and console.append(message.text))
    page.errors = errors  # type: ignore[attr-defined]
    page.console_errors = console  # type: ignore[attr-defined]
    yield page
    context.close()


class CuttableProxy:
    """A TCP proxy between the page and a live server, standing for a reverse proxy or the network:
    ``cut()`` drops every open connection at once (mid-stream, no clean end), and while
    ``refusing`` each new connection is closed as soon as it opens, as when the server is dead."""

    def __init__(self, target: str) -> None:
        self.target = ("127.0.0.1", int(target.rsplit(":", 1)[1]))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.refusing = False
        self.connections = 0
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def start(self) -> CuttableProxy:
        threading.Thread(target=self._accept, name="e2e-proxy", daemon=True).start()
        return self

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.refusing:
                client.close()
                continue
            upstream = socket.create_connection(self.target)
            with self._lock:
                self.connections += 1
                self._open.update((client, upstream))
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            self._close(src, dst)

    def _close(self, *socks: socket.socket) -> None:
        for sock in socks:
            with self._lock:
                self._open.discard(sock)
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def cut(self) -> None:
        with self._lock:
            socks = list(self._open)
        self._close(*socks)

    def stop(self) -> None:
        self.listener.close()
        self.cut()


@pytest.fixture
def proxy() -> Iterator[Callable[[str], CuttableProxy]]:
    """``proxy(server.url)``: a CuttableProxy in front of that server, stopped after the test."""
    proxies: list[CuttableProxy] = []

    def start(target: str) -> CuttableProxy:
        proxies.append(CuttableProxy(target).start())
        return proxies[-1]

    yield start
    for p in proxies:
        p.stop()


SCREENSHOTS = os.environ.get("SABER_SCREENSHOTS")
"""A folder: when set, the tests also save the README's screenshots there."""


def screenshot(page: Any, name: str) -> None:
    if SCREENSHOTS:
        page.screenshot(path=str(Path(SCREENSHOTS) / name), full_page=False)


def send(page: Any, text: str) -> None:
    page.get_by_test_id("composer").fill(text)
    page.get_by_test_id("composer").press("Enter")


def wait_until(predicate: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


@tool
async def wait_long(seconds: int) -> str:
    """Wait a long time.

    Args:
        seconds: How long.
    """
    await asyncio.sleep(seconds)
    return "waited"
