"""MCP: Saber as a host of Model Context Protocol servers (their tools join the registry) and as a
server (``saber mcp serve``). The SDK is imported only by the modules that talk the protocol."""

from saber.mcp.config import MCPServerConfig

__all__ = ["MCPServerConfig"]
