"""Real MCP servers this project did not write, installed once outside the checkout and cached:

- ``mcp-server-time`` (PyPI) in a virtual environment of its own (it pins its own ``mcp``), over stdio;
- ``@modelcontextprotocol/server-everything`` (npm) run by the machine's Node.js, over streamable HTTP.

The cache is ``$SABER_TEST_CACHE`` or ``saber-test-cache`` in the temp folder; reruns reuse it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
import venv
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import free_port, settings_for, wait_listening

from saber.agent import Agent
from saber.agent.memory import MemoryService
from saber.agent.memory.sqlite_store import SQLiteMemoryStore
from saber.config import Settings
from saber.config.mcp import MCPServerConfig
from saber.llm.base import ChatModel
from saber.rag.embedder import HashingEmbedder
from saber.rag.engine import RagEngine
from saber.rag.store import SQLiteStore

TIME_SERVER = "mcp-server-time==2026.10.19"
EVERYTHING = "@modelcontextprotocol/server-everything@2026.8.31"


def cache_dir() -> Path:
    root = Path(os.environ.get("SABER_TEST_CACHE") or Path(tempfile.gettempdir()) / "saber-test-cache")
    root.mkdir(parents=True, exist_ok=True)
    return root


def _install_once(target: Path, build: Callable[[Path], None]) -> Path:
    """Build ``target`` unless a finished build is there (a marker file is written last, so a
    half-done install is started again; venv scripts name their folder, so no build-and-rename)."""
    marker = target / ".saber-complete"
    with (target.parent / f".{target.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test run may be installing the same thing
        if marker.exists():
            return target
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        build(target)
        marker.write_text("ok\n")
    return target


@pytest.fixture(scope="session")
def time_server() -> str:
    """The path of the ``mcp-server-time`` command, in its own virtual environment."""
    key = TIME_SERVER.replace("==", "-")

    def build(folder: Path) -> None:
        venv.create(folder, with_pip=True)
        subprocess.run([str(folder / "bin" / "python"), "-m", "pip", "install", "--quiet", TIME_SERVER], check=True,
                       stdout=subprocess.DEVNULL)

    home = _install_once(cache_dir() / key, build)
    return str(home / "bin" / "mcp-server-time")


@pytest.fixture(scope="session")
def everything_url() -> Iterator[str]:
    """server-everything over streamable HTTP on a free port; its URL."""
    node = shutil.which("node")
    npm = shutil.which("npm")
    if node is None or npm is None:
        raise RuntimeError("Node.js and npm are needed for the streamable HTTP tests (see .ci/run)")
    key = EVERYTHING.replace("/", "_").replace("@", "")

    def build(folder: Path) -> None:
        subprocess.run([npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(folder), EVERYTHING],
                       check=True, stdout=subprocess.DEVNULL)

    home = _install_once(cache_dir() / key, build)
    entry = home / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    port = free_port()
    proc = subprocess.Popen([node, str(entry), "streamableHttp"], env={**os.environ, "PORT": str(port)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_listening(port, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


@pytest.fixture
async def make_agent(tmp_path: Path) -> AsyncIterator[Callable[..., Agent]]:
    """Agents with the given MCP servers, a scripted (or no) model and a hashing embedder."""
    agents: list[Agent] = []

    def factory(servers: list[MCPServerConfig], model: ChatModel | None = None, *, settings: Settings | None = None,
                **kwargs: Any) -> Agent:
        settings = settings or settings_for(tmp_path, servers)
        embedder = HashingEmbedder()
        engine = RagEngine(SQLiteStore(str(settings.sqlite_path)), embedder)
        memory = MemoryService(SQLiteMemoryStore(settings.sqlite_path), embedder)
        agent = Agent(settings, model=model, knowledge=engine, memory=memory, **kwargs)
        agents.append(agent)
        return agent

    yield factory
    for agent in agents:
        await agent.aclose()
