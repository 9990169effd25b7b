"""``saber mcp serve`` checked with the official SDK's client, over stdio and streamable HTTP."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_helpers import free_port, wait_listening

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


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([*saber_command(), "mcp", "serve", "--http", f"127.0.0.1:{port}"], env=server_env(saber_home(tmp_path)),
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


@asynccontextmanager
async def http_session(url: str) -> AsyncIterator[ClientSession]:
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
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
