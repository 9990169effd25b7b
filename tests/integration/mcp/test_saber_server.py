"""``saber mcp serve`` checked with the official SDK's client, over stdio and streamable HTTP."""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_helpers import free_port, wait_listening

from saber.agent.memory.sqlite_store import SQLiteMemoryStore
from saber.config import Settings

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]  # the first test installs the servers (cached)

CLOSED = "http://127.0.0.1:9"


def saber_home(tmp_path: Path) -> Path:
    """A home whose saber.toml keeps everything local: no model, no web search, weather unreachable."""
    home = tmp_path / "saber-home"
    home.mkdir()
    (home / "saber.toml").write_text(
        f'search_backend = "none"\nweather_geocoding_url = "{CLOSED}/v1/search"\n'
        f'weather_forecast_url = "{CLOSED}/v1/forecast"\n\n[graph]\nmax_retries = 1\n', encoding="utf-8")
    return home


def saber_command() -> list[str]:
    exe = shutil.which("saber", path=str(Path(sys.executable).parent))
    assert exe is not None, "the saber command is installed with the package"
    return [exe]


def server_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
    env["SABER_HOME"] = str(home)
    return env


@asynccontextmanager
async def stdio_session(home: Path) -> AsyncIterator[ClientSession]:
    command = saber_command()
    params = StdioServerParameters(command=command[0], args=[*command[1:], "mcp", "serve"], env=server_env(home))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@contextmanager
def serving_http(home: Path, host: str) -> Iterator[str]:
    """``saber mcp serve --http HOST:PORT`` running; the URL to reach it on loopback."""
    port = free_port()
    proc = subprocess.Popen([*saber_command(), "mcp", "serve", "--http", f"{host}:{port}"], env=server_env(home),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_listening(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    with serving_http(saber_home(tmp_path), "127.0.0.1") as url:
        yield url


@asynccontextmanager
async def http_session(url: str, key: str | None = None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {key}"} if key is not None else None
    async with create_mcp_http_client(headers=headers) as client, \
            streamable_http_client(url, http_client=client) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def check_server(session: ClientSession) -> None:
    listed = await session.list_tools()
    names = {t.name for t in listed.tools}
    assert {"get_time", "get_weather", "rag_search", "saber_ask"} <= names
    get_time = next(t for t in listed.tools if t.name == "get_time")
    assert get_time.input_schema["type"] == "object" and "timezone" in get_time.input_schema["properties"]

    now = await session.call_tool("get_time", {"timezone": "Asia/Tokyo"})
    assert not now.is_error and "Asia/Tokyo" in text_of(now)

    asked = await session.call_tool("saber_ask", {"query": "现在东京几点", "user_id": "mcp-test"})
    assert not asked.is_error
    assert asked.structured_content is not None and len(asked.structured_content["task_id"]) == 32
    assert asked.structured_content["mode"] == "tool" and "Asia/Tokyo" in text_of(asked)

    failing = await session.call_tool("get_weather", {"city": "北京"})  # its backend is unreachable
    assert failing.is_error and text_of(failing)
    bad = await session.call_tool("get_weather", {})
    assert bad.is_error and "city" in text_of(bad)
    unknown = await session.call_tool("no_such_tool", {})
    assert unknown.is_error and "unknown tool: no_such_tool" in text_of(unknown)
    empty = await session.call_tool("saber_ask", {"query": "  "})
    assert empty.is_error and "query" in text_of(empty)


async def test_saber_over_stdio(tmp_path: Path) -> None:
    async with stdio_session(saber_home(tmp_path)) as session:
        await check_server(session)


async def test_a_call_that_must_be_approved_waits_for_a_person_as_in_a_task(tmp_path: Path) -> None:
    """write_file asks before it runs: over MCP too (it ran unasked), answered by saber approve/deny."""
    import json

    home = saber_home(tmp_path)
    with (home / "saber.toml").open("a", encoding="utf-8") as toml:
        toml.write("\n[files]\nwrite = true\n")

    def saber_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*saber_command(), *args], env=server_env(home), capture_output=True, text=True,
                              timeout=120)

    async def waiting() -> dict[str, Any]:
        deadline = asyncio.get_running_loop().time() + 60
        while asyncio.get_running_loop().time() < deadline:
            pending = json.loads(saber_cli("approvals", "--json").stdout)
            if pending:
                return dict(pending[0])
            await asyncio.sleep(0.1)
        raise AssertionError("no question was asked within 60 s")

    async with stdio_session(home) as session:
        call = asyncio.create_task(session.call_tool("write_file", {"path": "a.txt", "content": "hi"}))
        question = await waiting()
        assert question["tool"] == "write_file" and question["params"]["path"] == "a.txt" and not call.done()
        assert saber_cli("deny", question["task_id"], question["node_id"], "--reason", "not now").returncode == 0
        denied = await call
        assert denied.is_error and "write_file was not approved" in text_of(denied) and "not now" in text_of(denied)
        assert not (home / "workspace" / "a.txt").exists()

        call = asyncio.create_task(session.call_tool("write_file", {"path": "a.txt", "content": "hi"}))
        question = await waiting()
        assert saber_cli("approve", question["task_id"], question["node_id"]).returncode == 0
        written = await call
        assert not written.is_error, text_of(written)
        assert (home / "workspace" / "a.txt").read_text(encoding="utf-8") == "hi"


async def test_saber_over_streamable_http(http_server: str) -> None:
    async with http_session(http_server) as session:
        await check_server(session)


async def test_saber_passes_on_its_own_mcp_servers_tools(tmp_path: Path, time_server: str) -> None:
    home = saber_home(tmp_path)
    with (home / "saber.toml").open("a", encoding="utf-8") as f:
        f.write(f'\n[[mcp.servers]]\nname = "time"\ncommand = "{time_server}"\n')
    async with stdio_session(home) as session:
        names = {t.name for t in (await session.list_tools()).tools}
        assert "get_current_time" in names
        result: Any = await session.call_tool("get_current_time", {"timezone": "Europe/Paris"})
        assert not result.is_error and result.structured_content["timezone"] == "Europe/Paris"


def refused(url: str, headers: dict[str, str]) -> tuple[int, str]:
    """A plain JSON-RPC POST with ``headers``: the status it gets and its WWW-Authenticate header."""
    request = urllib.request.Request(url, data=b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}', method="POST",
                                     headers={"Content-Type": "application/json",
                                              "Accept": "application/json, text/event-stream", **headers})
    try:
        with urllib.request.urlopen(request, timeout=30) as answered:
            return answered.status, ""
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("WWW-Authenticate", "")


def test_http_refuses_a_public_address_without_keys(tmp_path: Path) -> None:
    done = subprocess.run([*saber_command(), "mcp", "serve", "--http", f"0.0.0.0:{free_port()}"],
                          env=server_env(saber_home(tmp_path)), capture_output=True, text=True, timeout=120)
    errors = [line for line in done.stderr.splitlines() if line.startswith("saber: error:")]
    assert done.returncode == 2 and len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "refusing to listen on 0.0.0.0: no API keys are configured" in errors[0]


def test_http_on_a_taken_port_is_one_error_naming_it(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([*saber_command(), "mcp", "serve", "--http", f"127.0.0.1:{port}"],
                              env=server_env(saber_home(tmp_path)), capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines()[-1] == f"saber: error: cannot listen on 127.0.0.1:{port}: Address already in use"


async def test_http_with_keys_needs_one_and_runs_as_its_user(tmp_path: Path) -> None:
    home = saber_home(tmp_path)
    key = "sk-saber-test-alice"
    with (home / "saber.toml").open("a", encoding="utf-8") as f:
        f.write(f'\n[server.api_keys]\n"sha256:{hashlib.sha256(key.encode()).hexdigest()}" = "alice"\n')
    with serving_http(home, "0.0.0.0") as url:  # a public address is served: there are keys
        for headers in ({}, {"Authorization": "Bearer not-the-key"}):
            assert await asyncio.to_thread(refused, url, headers) == (401, "Bearer")
        with pytest.raises(ExceptionGroup) as no_session:
            async with http_session(url, "not-the-key"):
                pass
        assert no_session.group_contains(MCPError)

        async with http_session(url, key) as session:
            listed = {t.name: t for t in (await session.list_tools()).tools}
            assert "user_id" not in listed["saber_ask"].input_schema["properties"]  # the key decides it
            now = await session.call_tool("get_time", {"timezone": "Asia/Tokyo"})
            assert not now.is_error and "Asia/Tokyo" in text_of(now)
            asked = await session.call_tool("saber_ask", {"query": "现在东京几点"})
            assert not asked.is_error and "Asia/Tokyo" in text_of(asked)
            other = await session.call_tool("saber_ask", {"query": "现在东京几点", "user_id": "bob"})
            assert other.is_error and "the key decides the user" in text_of(other)
    history = SQLiteMemoryStore(Settings(home=home).sqlite_path)  # whose conversation saber_ask added to
    try:
        assert [h.content for h in history.recent_history("alice", 10) if h.role == "user"] == ["现在东京几点"]
        assert history.recent_history("mcp", 10) == [] and history.recent_history("bob", 10) == []
    finally:
        history.close()
