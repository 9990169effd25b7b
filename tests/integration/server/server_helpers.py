"""A real uvicorn server on a free loopback port, in a thread, and an SSE reader for the tests."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from saber.agent import Agent
from saber.agent.memory import MemoryService
from saber.agent.memory.sqlite_store import SQLiteMemoryStore
from saber.config import Settings
from saber.llm.base import ChatModel
from saber.rag.embedder import Embedder, HashingEmbedder
from saber.rag.engine import RagEngine
from saber.rag.store import SQLiteStore
from saber.server import create_app
from saber.server.auth import hash_key

CLOSED = "http://127.0.0.1:9"
KEYS = {"key-alice": "alice", "key-bob": "bob"}


def settings_for(home: Path, *, keys: bool = False, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "home": home,
        "search": {"backend": "none"},
        "weather": {"geocoding_url": f"{CLOSED}/v1/search", "forecast_url": f"{CLOSED}/v1/forecast"},
        "graph": {"retry_delay": 0.0, "max_attempts": 1},
        "server": {"shutdown_grace": 1.0},
    }
    if keys:
        values["server"]["api_keys"] = {hash_key(k): user for k, user in KEYS.items()}
    for section, items in overrides.items():  # a section's keys over the defaults above, one by one
        values[section] = {**values.get(section, {}), **items} if isinstance(items, dict) else items
    return Settings(**values)


def make_agent(settings: Settings, model: ChatModel | None = None, *, embedder: Embedder | None = None,
               **kwargs: Any) -> Agent:
    """The agent on ``settings``' SQLite file; the knowledge base embeds with ``embedder`` (default:
    a ``HashingEmbedder``, which memory always uses)."""
    hashing = HashingEmbedder()
    engine = RagEngine(SQLiteStore(str(settings.sqlite_path)), embedder or hashing, max_file_mb=settings.rag.max_file_mb)
    memory = MemoryService(SQLiteMemoryStore(settings.sqlite_path), hashing)
    return Agent(settings, model=model, knowledge=engine, memory=memory, **kwargs)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(proc: subprocess.Popen[Any], port: int, *, seconds: float = 60.0) -> None:
    """Until the server process on ``port`` answers ``/readyz``; an AssertionError with its output
    if it exits first or never does."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited: {proc.communicate()}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"the server on port {port} never became ready")


def free_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@dataclass
class LiveServer:
    """``create_app(agent, settings)`` served by uvicorn in a thread of its own (its own event loop)."""

    agent: Agent
    settings: Settings
    sock: socket.socket = field(default_factory=free_socket)
    server: uvicorn.Server | None = None
    thread: threading.Thread | None = None
    loop: asyncio.AbstractEventLoop | None = None
    error: BaseException | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def start(self) -> LiveServer:
        app = create_app(self.agent, self.settings)
        self.app = app
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on",
                                                    timeout_graceful_shutdown=5))
        ready = threading.Event()

        async def main() -> None:
            self.loop = asyncio.get_running_loop()
            assert self.server is not None
            try:
                serving = asyncio.ensure_future(self.server.serve(sockets=[self.sock]))
                while not self.server.started and not serving.done():  # noqa: ASYNC110 - uvicorn has no started event
                    await asyncio.sleep(0.01)
                ready.set()
                await serving
            finally:
                await self.agent.aclose(grace=1)
                close_model = getattr(self.agent.model, "aclose", None)
                if close_model is not None:
                    await close_model()

        def run() -> None:
            try:
                asyncio.run(main())
            except BaseException as exc:  # surfaced by stop()
                self.error = exc
            finally:
                ready.set()

        self.thread = threading.Thread(target=run, name="saber-test-server", daemon=True)
        self.thread.start()
        ready.wait(30)
        assert self.server.started, f"the server did not start: {self.error!r}"
        return self

    def call(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` (sync, or returning a coroutine) on the server's loop and return its result."""
        assert self.loop is not None

        async def runner() -> Any:
            result = fn()
            if asyncio.iscoroutine(result):
                return await result
            return result

        return asyncio.run_coroutine_threadsafe(runner(), self.loop).result(30)

    def stop(self) -> None:
        if self.server is not None:
            self.server.should_exit = True
        if self.thread is not None:
            self.thread.join(30)
        self.sock.close()
        if self.error is not None:
            raise self.error


@dataclass(frozen=True)
class SSE:
    id: int | None
    event: str
    data: Any


def read_sse(response: httpx.Response) -> Iterator[SSE]:
    """Parse an SSE response as it arrives (comments such as pings are skipped)."""
    event_id: int | None = None
    kind, data = "message", []
    for line in response.iter_lines():
        if line == "":
            if data:
                text = "\n".join(data)
                yield SSE(event_id, kind, text if text == "[DONE]" else json.loads(text))
            event_id, kind, data = None, "message", []
        elif line.startswith(":"):
            continue
        else:
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "id":
                event_id = int(value)
            elif name == "event":
                kind = value
            elif name == "data":
                data.append(value)


def collapse(kinds: list[str]) -> list[str]:
    out: list[str] = []
    for k in kinds:
        if not (k == "token" and out and out[-1] == "token"):
            out.append(k)
    return out
