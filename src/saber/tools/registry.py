"""``ToolRegistry``: the tools an agent may use, safe under threads and asyncio tasks.

Readers take a ``snapshot()`` (a copy made under the lock) and iterate it without holding
anything, so a long task never blocks an MCP server registering tools meanwhile.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from saber.tools.base import Tool
from saber.tools.errors import UnknownToolError


class ToolRegistry:
    """The tools an agent may use, by name: ``register``, ``unregister``, ``get``; ``snapshot()``
    is a stable dict for one request (tools that MCP servers add later do not change a running
    task), ``filter(names)`` a subset. Safe to use from several threads."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._lock = threading.Lock()
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self.register(t)

    def register(self, tool: Tool, *, replace: bool = True) -> None:
        """Add ``tool``; a tool of the same name is replaced unless ``replace`` is False."""
        if not isinstance(tool, Tool):
            raise TypeError(f"register() takes a Tool, got {type(tool).__name__} (decorate functions with @tool)")
        with self._lock:
            if not replace and tool.name in self._tools:
                raise ValueError(f"a tool named {tool.name!r} is already registered")
            self._tools[tool.name] = tool

    def unregister(self, name: str) -> Tool | None:
        """Remove and return the tool called ``name`` (None when there was none)."""
        with self._lock:
            return self._tools.pop(name, None)

    def get(self, name: str) -> Tool | None:
        with self._lock:
            return self._tools.get(name)

    def snapshot(self) -> dict[str, Tool]:
        """A copy of the name → tool table; iterate it freely while others register."""
        with self._lock:
            return dict(self._tools)

    def filter(self, names: Iterable[str]) -> dict[str, Tool]:
        """The named tools, in the order given. Unknown names raise UnknownToolError naming them."""
        wanted = list(dict.fromkeys(names))
        tools = self.snapshot()
        missing = [n for n in wanted if n not in tools]
        if missing:
            raise UnknownToolError(missing, known=list(tools))
        return {n: tools[n] for n in wanted}

    def names(self) -> list[str]:
        with self._lock:
            return list(self._tools)

    def __contains__(self, name: object) -> bool:
        with self._lock:
            return name in self._tools

    def __len__(self) -> int:
        with self._lock:
            return len(self._tools)
