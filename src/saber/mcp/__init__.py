"""MCP client: Saber as a host of Model Context Protocol servers, whose tools join the registry (a
tool source, below the agent). Saber as an MCP server (``saber mcp serve``) is
``saber.server.mcp_server``. The SDK is imported only by the modules that talk the protocol."""

from typing import Any

__all__ = ["MCPServerConfig"]


def __getattr__(name: str) -> Any:
    if name == "MCPServerConfig":
        from saber.config.mcp import MCPServerConfig

        return MCPServerConfig
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
