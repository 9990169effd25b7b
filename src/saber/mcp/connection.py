"""``MCPConnection``: one MCP server, kept connected by a background task of its own.

The SDK's transports and ``ClientSession`` are anyio context managers that must be entered and
left in one task, so a task owns them for the connection's life; tool calls from any task of the
same event loop go through the session it publishes. When the connection drops (a stdio server
exits, its stdout closes, an HTTP server stops answering) the task starts it again with
exponential backoff, and the tools come back when the new session has listed them. Calls in
flight when it drops fail at once with a retryable ``ToolError``; none hangs.

Each attempt has ``startup_timeout`` seconds to answer; when they are up the connection says so at
once (``error``, and start-up stops waiting for it), before the failed attempt is wound down.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import tempfile
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import IO, Any, Literal, TextIO, cast

import anyio
import mcp_types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from saber.config.mcp import MCPServerConfig
from saber.tools.errors import ToolError

log = logging.getLogger(__name__)

State = Literal["stopped", "starting", "ready", "restarting", "failed"]

STABLE_SECONDS = 30.0
"""A connection that stayed up this long resets the failure count (and the backoff)."""


class _QuietParseFailures(logging.Filter):
    """The SDK logs output that is not JSON-RPC with a traceback; the connection reports it
    itself, in one line naming the server and the output."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(("Failed to parse JSONRPC message", "Error parsing JSON response"))


for _sdk_logger in ("mcp.client.stdio", "mcp.client.streamable_http"):
    logging.getLogger(_sdk_logger).addFilter(_QuietParseFailures())


class MCPConnection:
    """A server's session, state and current tool list; ``on_change`` is called whenever the
    tool list changes (connected, ``tools/list_changed``, lost)."""

    def __init__(
        self,
        config: MCPServerConfig,
        *,
        on_change: Callable[[MCPConnection], None] | None = None,
        startup_timeout: float = 10.0,
        max_failures: int = 5,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
    ) -> None:
        self.config = config
        self.on_change = on_change
        self.startup_timeout = startup_timeout
        self.max_failures = max_failures
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.state: State = "stopped"
        self.error: str | None = None
        """Why the last attempt failed or the connection was lost (None while healthy)."""
        self.tools: list[types.Tool] = []
        self.restarts = 0
        self.server_name: str | None = None
        self._session: ClientSession | None = None
        self._ready = asyncio.Event()
        self._settled = asyncio.Event()
        """Set once the first attempt ended (connected or failed): what start-up waits for."""
        self._wake = asyncio.Event()
        """Set when the session must end: lost, tools changed (re-list) or stop."""
        self._relist = False
        self._bad_output: str | None = None
        """What the server said that is not JSON-RPC, in this attempt (its first bytes)."""
        self._up_since: float | None = None
        self._stopping = False
        self._task: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return self.config.name

    # -- life cycle -------------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._stopping = False
            self._task = asyncio.create_task(self._run(), name=f"saber-mcp-{self.name}")

    async def wait_settled(self, limit: float | None) -> bool:
        """Wait until the first attempt has ended (at most ``limit`` seconds); True when it has."""
        try:
            async with asyncio.timeout(limit):
                await self._settled.wait()
            return True
        except TimeoutError:
            return False

    async def wait_ready(self, limit: float | None) -> bool:
        """Wait until the server is connected (at most ``limit`` seconds); True when it is."""
        try:
            async with asyncio.timeout(limit):
                await self._ready.wait()
            return True
        except TimeoutError:
            return False

    async def stop(self) -> None:
        """Close the session and stop the server (a stdio server's process is ended by the SDK)."""
        self._stopping = True
        self._wake.set()
        task, self._task = self._task, None
        if task is not None:
            try:
                async with asyncio.timeout(10):
                    await asyncio.shield(task)
            except TimeoutError:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        self.state = "stopped"

    async def _run(self) -> None:
        try:
            await self._attempts()
        finally:
            self._settled.set()  # nobody waits for a runner that is gone

    async def _attempts(self) -> None:
        failures = 0
        while not self._stopping:
            self.state = "starting" if self.restarts == 0 and failures == 0 else "restarting"
            self._up_since = None
            try:
                await self._serve_once()
            except Exception as exc:
                self.error = _describe(exc)
                log.warning("MCP server %s: %s", self.name, self.error)
            stable = self._up_since is not None and time.monotonic() - self._up_since >= STABLE_SECONDS
            self._down()
            if self._stopping:
                break
            failures = 0 if stable else failures + 1
            self._settled.set()
            if failures >= self.max_failures:
                self.state = "failed"
                log.warning("MCP server %s failed %d times in a row; giving up: %s", self.name, failures, self.error)
                return
            self.state = "restarting"
            delay = min(self.max_backoff, self.backoff * 2 ** max(0, failures - 1))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._wait_stop()
            self.restarts += 1
        self.state = "stopped"

    async def _wait_stop(self) -> None:
        while not self._stopping:
            self._wake.clear()
            await self._wake.wait()

    async def _serve_once(self) -> None:
        """Connect, list the tools, then hold the session until it is lost or stopped."""
        self._wake.clear()
        self._bad_output = None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.startup_timeout
        with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as errlog:
            overdue = loop.call_at(deadline, self._overdue, errlog)
            try:
                async with AsyncExitStack() as stack:
                    read, write = await stack.enter_async_context(self._transport(errlog))
                    inner_send, inner_read = anyio.create_memory_object_stream[Any](0)
                    tg = await stack.enter_async_context(anyio.create_task_group())
                    tg.start_soon(self._forward, read, inner_send)
                    session = await stack.enter_async_context(
                        ClientSession(inner_read, write, message_handler=self._on_message)
                    )
                    with anyio.fail_after(max(0.0, deadline - loop.time())):
                        init = await session.initialize()
                        tools = await _list_all(session)
                    self.server_name = init.server_info.name if init.server_info else None
                    self._up(session, tools)
                    while not self._stopping:
                        await self._wake.wait()
                        self._wake.clear()
                        if self._relist and not self._stopping and self._session is not None:
                            self._relist = False
                            self._set_tools(await _list_all(session))
                            continue
                        break
                    tg.cancel_scope.cancel()
            except TimeoutError:
                raise ConnectionError(self._no_answer(errlog)) from None
            except BaseException as exc:
                leaf = _leaf(exc)
                if isinstance(leaf, TimeoutError):
                    raise ConnectionError(self._no_answer(errlog)) from None
                if not isinstance(leaf, Exception):
                    raise
                if self._bad_output is not None and self._up_since is None:
                    raise ConnectionError(f"{self._bad_output}{_tail(errlog)}") from leaf
                if leaf is exc:
                    raise
                raise ConnectionError(f"{_describe(leaf)}{_tail(errlog)}") from leaf
            finally:
                overdue.cancel()
            if not self._stopping and self.error is None:
                self.error = "connection lost" + _tail(errlog)

    def _no_answer(self, errlog: IO[str]) -> str:
        return (self._bad_output or f"no answer within {self.startup_timeout:g} s") + _tail(errlog)

    def _overdue(self, errlog: IO[str]) -> None:
        """The attempt's start-up time is up: say why now (the attempt still has to wind down)."""
        if self._up_since is None and not self._stopping:
            self.error = self._no_answer(errlog)
            self._settled.set()

    def _transport(self, errlog: IO[str]) -> Any:
        c = self.config
        if c.command:
            params = StdioServerParameters(command=c.command, args=list(c.args), env=dict(c.env) or None, cwd=c.cwd)
            return stdio_client(params, errlog=cast(TextIO, errlog))
        assert c.url is not None
        return _http_transport(c.url, dict(c.headers))

    async def _forward(self, read: Any, send: Any) -> None:
        """Pass messages on to the session; the end of the server's stream is the connection lost."""
        try:
            async with send:
                async for item in read:
                    if isinstance(item, Exception):  # what the transport could not read
                        self._unreadable(item)
                        continue
                    await send.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            pass
        if not self._stopping:
            self.error = self.error or "the server closed the connection"
            self._lost()

    def _unreadable(self, exc: Exception) -> None:
        output = _output_of(exc)
        if output is None:
            log.warning("MCP server %s: %s", self.name, _describe(exc))
            return
        message = _not_json_rpc(output)
        self._bad_output = self._bad_output or message
        log.warning("MCP server %s %s", self.name, message)

    def _lost(self) -> None:
        """The connection is gone: no new call may use the session; the runner starts again."""
        if self._stopping:
            return
        self._session = None
        self._ready.clear()
        if self.state == "ready":
            self.state = "restarting"
        self._wake.set()

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            log.warning("MCP server %s: %s", self.name, _describe(message))
            return
        if isinstance(message, types.ToolListChangedNotification):
            self._relist = True
            self._wake.set()

    def _up(self, session: ClientSession, tools: list[types.Tool]) -> None:
        self._session = session
        self._up_since = time.monotonic()
        self.state = "ready"
        self.error = None
        self._ready.set()
        self._settled.set()
        self._set_tools(tools)

    def _set_tools(self, tools: list[types.Tool]) -> None:
        allowed = self.config.tools
        self.tools = [t for t in tools if allowed is None or t.name in allowed]
        if self.on_change is not None:
            self.on_change(self)

    def _down(self) -> None:
        self._session = None
        self._ready.clear()
        if self.tools:
            self._set_tools([])

    # -- calls ----------------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Call ``tool``; ToolError (retryable) when the server is down, times out or drops the call."""
        timeout = self.config.timeout
        session = self._session
        if session is None and self.state in ("starting", "restarting"):
            try:
                async with asyncio.timeout(timeout):
                    await self._ready.wait()
            except TimeoutError:
                pass
            session = self._session
        if session is None:
            why = f": {self.error}" if self.error else ""
            raise ToolError(f"MCP server {self.name} is not connected ({self.state}){why}",
                            retryable=self.state != "failed")
        try:
            result = await session.call_tool(tool, arguments, read_timeout_seconds=timeout)
        except MCPError as exc:
            raise self._call_error(tool, exc) from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as exc:
            self._lost()
            raise ToolError(f"MCP server {self.name}: the connection failed during {tool}: {_describe(exc)}",
                            retryable=True) from None
        if not isinstance(result, types.CallToolResult):
            raise ToolError(f"MCP server {self.name}: {tool} returned {type(result).__name__}, not a tool result")
        return result

    def _call_error(self, tool: str, exc: MCPError) -> ToolError:
        if exc.code == types.CONNECTION_CLOSED:
            self._lost()
            return ToolError(f"MCP server {self.name} closed the connection during {tool}", retryable=True)
        if exc.code == types.REQUEST_TIMEOUT:
            return ToolError(f"MCP server {self.name}: {tool} did not answer within {self.config.timeout:g} s",
                             retryable=True)
        return ToolError(f"MCP server {self.name} refused {tool}: {_describe(exc)}", retryable=False)

    def status(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "transport": self.config.transport,
            "target": self.config.describe(),
            "enabled": self.config.enabled,
            "state": self.state if self.config.enabled else "disabled",
            "error": self.error,
            "restarts": self.restarts,
            "server": self.server_name,
            "tools": [t.name for t in self.tools],
        }


async def _list_all(session: ClientSession) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(100):  # a server that pages forever is cut off
        page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


@contextlib.asynccontextmanager
async def _http_transport(url: str, headers: dict[str, str]) -> Any:
    async with create_mcp_http_client(headers=headers or None) as client, \
            streamable_http_client(url, http_client=client) as streams:
        yield streams


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups anyio wraps errors in."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _describe(exc: BaseException) -> str:
    exc = _leaf(exc)
    if isinstance(exc, MCPError):
        if exc.code == types.CONNECTION_CLOSED:
            return "the server closed the connection (did it exit?)"
        if exc.code == types.PARSE_ERROR and exc.message.startswith("Failed to parse"):
            # the SDK could not read an HTTP server's answer, and words it with pydantic's report
            found = re.search(r"input_value=b?(['\"])(.*?)\1, input_type=", exc.message)
            return _not_json_rpc(found.group(2) if found else None)
        return " ".join(exc.message.split())
    if type(exc) is ConnectionError:  # ours, already worded
        return str(exc)
    if type(exc).__name__ == "ConnectError":  # httpx2's: the URL refused or did not resolve
        return f"cannot connect: {exc}"
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _not_json_rpc(output: str | None) -> str:
    return "answered with output that is not JSON-RPC" + (f": {output!r}" if output else "")


def _output_of(exc: Exception, limit: int = 60) -> str | None:
    """The start of an output line the SDK could not read as JSON-RPC (None for other errors)."""
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError) or not exc.errors():
        return None
    value = exc.errors(include_url=False)[0].get("input")
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + "…"


def _tail(errlog: IO[str], limit: int = 300) -> str:
    """The end of the server's stderr, for the error message (a server says why it exits). Read
    without moving the file's offset, which a running server shares as its stderr."""
    try:
        fd = errlog.fileno()
        start = max(0, os.fstat(fd).st_size - 4000)
        if hasattr(os, "pread"):
            raw = os.pread(fd, 4000, start)
        else:  # Windows: no pread (the server's offset moves too; it is about to end)
            errlog.buffer.seek(start)  # type: ignore[attr-defined]
            raw = errlog.buffer.read()  # type: ignore[attr-defined]
    except (OSError, ValueError):
        return ""
    text = " ".join(raw.decode("utf-8", errors="replace").split())
    if not text:
        return ""
    return f" (stderr: …{text[-limit:]})" if len(text) > limit else f" (stderr: {text})"
