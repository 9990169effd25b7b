"""``MCPManager``: the agent's MCP servers, their connections and their tools in the registry.

Servers connect concurrently; ``start()`` waits for them at most ``startup_timeout`` seconds, so
a slow or broken server never holds up the agent (a late one registers its tools when it is
ready). A tool is registered under the name its server gives (after ``prefix``), or
``server__tool`` when another tool already has that name. The registry is updated whenever a
server's tools change; a running task keeps the snapshot it started with.

``add``/``remove``/``test``/``list`` are the service the HTTP routes and the CLI call.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from saber.config.mcp import MCPServerConfig
from saber.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from saber.mcp.connection import MCPConnection

log = logging.getLogger(__name__)

ToolsChanged = Callable[[], None]


class NotConnected(Exception):
    """A server added to be saved did not connect: it is not added."""


class MCPManager:
    def __init__(
        self,
        registry: ToolRegistry,
        servers: Iterable[MCPServerConfig] = (),
        *,
        startup_timeout: float = 10.0,
        max_failures: int = 5,
        backoff: float = 0.5,
    ) -> None:
        self.registry = registry
        self.startup_timeout = startup_timeout
        self.max_failures = max_failures
        self.backoff = backoff
        self.configs: dict[str, MCPServerConfig] = {}
        for config in servers:
            if config.name in self.configs:
                raise ValueError(f"two MCP servers are named {config.name!r}")
            self.configs[config.name] = config
        self.connections: dict[str, MCPConnection] = {}
        self._registered: dict[str, dict[str, str]] = {}
        """server → {registered name: the server's tool name}."""
        self._lock = threading.Lock()
        self._listeners: list[ToolsChanged] = []
        self._started = False
        self._start_lock: asyncio.Lock | None = None

    @classmethod
    def from_settings(cls, settings: Any, registry: ToolRegistry) -> MCPManager:
        return cls(registry, settings.mcp.servers, startup_timeout=settings.mcp.startup_timeout)

    def on_tools_changed(self, listener: ToolsChanged) -> None:
        """Call ``listener()`` after every change of the MCP tools in the registry (the tool index)."""
        self._listeners.append(listener)

    # -- life cycle -------------------------------------------------------------------------------

    async def start(self) -> list[dict[str, Any]]:
        """Connect every enabled server (once; later calls return at once) and wait for them up to
        ``startup_timeout`` seconds. Returns their status; servers that failed are logged."""
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if not self._started:
                self._started = True
                for config in self.configs.values():
                    if config.enabled:
                        self._connect(config)
                await self._wait(list(self.connections.values()))
        return self.list()

    async def _wait(self, connections: list[MCPConnection]) -> None:
        """Until each has connected or failed; a connection settles by itself when its
        ``startup_timeout`` is up, with the reason in its status (then it keeps trying)."""
        if connections:
            await asyncio.gather(*(c.wait_settled(None) for c in connections))
        for c in connections:
            if c.state != "ready":
                log.warning("MCP server %s is %s%s", c.name, c.state, f": {c.error}" if c.error else "")

    def _connect(self, config: MCPServerConfig) -> MCPConnection:
        from saber.mcp.connection import MCPConnection  # the SDK is imported only when a server is used

        connection = MCPConnection(config, on_change=self._sync, startup_timeout=self.startup_timeout,
                                   max_failures=self.max_failures, backoff=self.backoff)
        self.connections[config.name] = connection
        connection.start()
        return connection

    async def aclose(self) -> None:
        connections = list(self.connections.values())
        self.connections.clear()
        await asyncio.gather(*(c.stop() for c in connections), return_exceptions=True)
        for name in list(self._registered):
            self._unregister(name)
        self._notify()

    # -- the service (CLI, HTTP routes) ---------------------------------------------------------

    def list(self) -> list[dict[str, Any]]:
        """Every configured server: transport, target, state, error, tools (registered names)."""
        out = []
        for name, config in self.configs.items():
            connection = self.connections.get(name)
            status = connection.status() if connection else {
                "name": name, "transport": config.transport, "target": config.describe(), "enabled": config.enabled,
                "state": "disabled" if not config.enabled else "stopped", "error": None, "restarts": 0,
                "server": None, "tools": [],
            }
            status["tools"] = sorted(self._registered.get(name, {}))
            out.append(status)
        return out

    async def add(self, config: MCPServerConfig, *, wait: bool = True, save_to: Path | None = None) -> dict[str, Any]:
        """Add a server at run time and connect it (waiting up to ``startup_timeout`` when ``wait``).

        With ``save_to`` (a saber.toml) it is written there too, so it is back after a restart,
        but only once it has connected (a disabled one at once): a server that does not connect
        is stopped and forgotten, and ``NotConnected`` says why; nothing is written."""
        if config.name in self.configs:
            raise ValueError(f"an MCP server named {config.name!r} already exists")
        self.configs[config.name] = config
        try:
            if config.enabled:
                connection = self._connect(config)
                if wait or save_to is not None:
                    await self._wait([connection])
                if save_to is not None and connection.state != "ready":
                    raise NotConnected(f"MCP server {config.name!r} did not connect "
                                       f"({connection.error or connection.state}): it was not added")
            if save_to is not None:
                from saber.mcp.toml_edit import add_server

                await asyncio.to_thread(add_server, save_to, config)
        except BaseException:
            await self._forget(config.name)
            raise
        return next(s for s in self.list() if s["name"] == config.name)

    async def _forget(self, name: str) -> None:
        self.configs.pop(name, None)
        connection = self.connections.pop(name, None)
        if connection is not None:
            await connection.stop()
        self._unregister(name)
        self._notify()

    async def remove(self, name: str, *, save_to: Path | None = None) -> bool:
        """Disconnect the server and drop its tools (and its entry in ``save_to``, a saber.toml);
        False when there is no such server."""
        if name not in self.configs:
            return False
        if save_to is not None:
            from saber.mcp.toml_edit import remove_server

            await asyncio.to_thread(remove_server, save_to, name)
        await self._forget(name)
        return True

    async def test(self, name: str) -> dict[str, Any]:
        """Connect to a configured server on its own (not touching the registry), list its tools
        and disconnect: ``{name, ok, error, server, tools: [{name, description}]}``."""
        config = self.configs.get(name)
        if config is None:
            raise KeyError(name)
        return await probe(config, startup=self.startup_timeout)

    # -- the registry ---------------------------------------------------------------------------

    def _sync(self, connection: MCPConnection) -> None:
        """Register ``connection``'s current tools in place of its previous ones."""
        from saber.mcp.convert import saber_name, to_tool

        server = connection.name
        with self._lock:
            self._unregister(server)
            if server not in self.configs or server not in self.connections:
                return
            config = connection.config
            taken = set(self.registry.names())
            mine: dict[str, str] = {}
            for remote in connection.tools:
                wanted = saber_name(config.prefix + remote.name)
                name = wanted if wanted not in taken else saber_name(f"{server}__{remote.name}")
                if name in taken:
                    log.warning("MCP server %s: tool %s skipped, %s and %s are both taken", server, remote.name,
                                wanted, name)
                    continue
                try:
                    tool = to_tool(remote, name, connection.call)
                except ValueError as exc:
                    log.warning("MCP server %s: tool %s skipped: %s", server, remote.name, exc)
                    continue
                self.registry.register(tool)
                taken.add(name)
                mine[name] = remote.name
            self._registered[server] = mine
        self._notify()

    def _unregister(self, server: str) -> None:
        for name in self._registered.pop(server, {}):
            self.registry.unregister(name)

    def _notify(self) -> None:
        for listener in self._listeners:
            try:
                listener()
            except Exception:
                log.exception("a listener of MCP tool changes failed")


async def probe(config: MCPServerConfig, *, startup: float = 10.0) -> dict[str, Any]:
    """Connect once, list the tools, disconnect: what ``saber mcp test`` reports."""
    from saber.mcp.connection import MCPConnection

    connection = MCPConnection(config, startup_timeout=startup, max_failures=1)
    connection.start()
    try:
        await connection.wait_settled(startup + 5)
        tools = [{"name": t.name, "description": (t.description or "").strip().splitlines()[0] if t.description else ""}
                 for t in connection.tools]
        ok = connection.state == "ready"
        return {"name": config.name, "ok": ok, "error": None if ok else (connection.error or connection.state),
                "server": connection.server_name, "tools": tools}
    finally:
        await connection.stop()
