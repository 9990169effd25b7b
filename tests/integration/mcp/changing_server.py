"""A small MCP server (the SDK's MCPServer) whose tool list changes: calling ``add_double`` adds
a ``double`` tool and sends ``notifications/tools/list_changed``. Run: python changing_server.py"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("changing")


def double(x: int) -> int:
    """Twice x."""
    return 2 * x


@server.tool()
async def add_double(ctx: Context) -> str:
    """Add the tool 'double' to this server."""
    server.add_tool(double, name="double")
    await ctx.session.send_tool_list_changed()
    return "added"


if __name__ == "__main__":
    server.run()
