"""Saber as an MCP server: its tools (built-ins, knowledge base, and the tools of the MCP servers it
is itself connected to, unless told not to) plus ``saber_ask``, which runs a whole request.

``saber mcp serve`` runs it over stdio (what Claude Desktop, Cursor and most hosts start) or, with
``--http HOST:PORT``, over streamable HTTP at ``/mcp``. A tool's failure, bad arguments included,
comes back as a result with ``is_error``, never as a protocol error.

Over HTTP with API keys (the HTTP API's: ``[server] api_keys`` / ``server.keys_file``), every
request needs ``Authorization: Bearer <key>`` (401 otherwise) and ``saber_ask`` runs as the key's
user; without keys only a loopback address is served (``saber mcp serve`` checks it).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from saber.events import ApprovalRequired
from saber.tools.base import Tool
from saber.tools.errors import ToolError

if TYPE_CHECKING:
    from saber.server.auth import KeyRing

log = logging.getLogger(__name__)

ASK_TOOL = "saber_ask"
ASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "The question or task, in any language."},
        "user_id": {"type": "string", "description": "Whose history, memory and preferences to use.", "default": "mcp"},
        "mode": {"type": "string", "enum": ["chat", "tool", "rag", "react"],
                 "description": "Force a mode; chosen by Saber's router when left out."},
    },
    "required": ["query"],
}


def build_server(agent: Any, *, include_mcp_tools: bool = True) -> Server[Any]:
    """An MCP server over ``agent``'s registry (read at every list and call: tools that come and
    go are seen) plus ``saber_ask``."""

    def exposed() -> dict[str, Tool]:
        tools = agent.registry.snapshot()
        return {n: t for n, t in tools.items() if include_mcp_tools or not t.is_mcp}

    async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        await agent.start()
        listed = [types.Tool(name=t.name, description=t.description, input_schema=t.schema) for t in exposed().values()]
        schema = ASK_SCHEMA if _key_user(ctx) is None else _without_user(ASK_SCHEMA)
        listed.append(types.Tool(
            name=ASK_TOOL, input_schema=schema,
            description="Ask Saber: it routes the request, plans and runs tools (in parallel), and answers. "
                        "The answer is the text; the task id and mode are in the structured content.",
        ))
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        if params.name == ASK_TOOL:
            return await _ask(agent, arguments, _key_user(ctx))
        await agent.start()
        tool = exposed().get(params.name)
        if tool is None:
            return _error(f"unknown tool: {params.name} (known: {', '.join(sorted(exposed())) or 'none'}, {ASK_TOOL})")
        try:
            checked = tool.validate(arguments)
            refusal = await _approved(agent, tool, checked, _key_user(ctx) or "mcp")
            if refusal is not None:
                return _error(refusal)
            value = await tool.run(checked, validate=False)
        except ToolError as exc:
            return _error(str(exc))
        except Exception as exc:
            log.exception("tool %s failed", tool.name)
            return _error(f"{tool.name} failed: {type(exc).__name__}: {exc}")
        return _result(value)

    return Server("saber", version=_version(), instructions="Saber's tools, and saber_ask to run a whole request.",
                  on_list_tools=list_tools, on_call_tool=call_tool)


async def _approved(agent: Any, tool: Tool, arguments: dict[str, Any], user_id: str) -> str | None:
    """A call that must be approved (a write, a command off the allow-list, a tool in
    ``approval_tools``) waits for a person's yes — ``saber approvals`` lists it, ``saber approve``
    answers — as it would in a task; why it may not run, or None when it may."""
    reason = agent.approvals.reason_for(tool, arguments)
    if reason is None:
        return None
    call_id = f"mcp-{uuid.uuid4().hex}"

    async def said(event: Any) -> None:
        if isinstance(event, ApprovalRequired):
            log.warning("MCP call of %s waits for approval: saber approve %s call", tool.name, call_id)

    decision = await agent.approvals.request(user_id=user_id, task_id=call_id, node_id="call", tool=tool.name,
                                             params=arguments, reason=reason, emit=said)
    if decision.approved:
        return None
    why = f": {decision.reason}" if decision.reason else ""
    return f"{tool.name} was not approved ({decision.by}){why}"


def _key_user(ctx: ServerRequestContext[Any]) -> str | None:
    """The user of the API key this HTTP request was let in with (``KeyGate`` put it in the
    request's state); None over stdio or without keys."""
    scope = getattr(ctx.request, "scope", None)
    user = scope.get("state", {}).get("key_user") if isinstance(scope, dict) else None
    return str(user) if user else None


def _without_user(schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "properties": {k: v for k, v in schema["properties"].items() if k != "user_id"}}


async def _ask(agent: Any, arguments: dict[str, Any], key_user: str | None = None) -> types.CallToolResult:
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        return _error("saber_ask: query: a non-empty string is required")
    mode = arguments.get("mode")
    if mode is not None and mode not in ("chat", "tool", "rag", "react"):
        return _error(f"saber_ask: mode: {mode!r} is not one of chat, tool, rag, react")
    user_id = arguments.get("user_id") or key_user or "mcp"
    if not isinstance(user_id, str):
        return _error("saber_ask: user_id: a string is required")
    if key_user is not None and user_id != key_user:
        return _error("saber_ask: user_id cannot be chosen with an API key: the key decides the user")
    try:
        answer = await agent.ask(query, user_id=user_id, mode=mode)
    except (ValueError, ToolError) as exc:
        return _error(f"saber_ask: {exc}")
    errors = [str(e.data["message"]) for e in answer.events if e.type == "error"]
    structured = {"task_id": answer.task_id, "mode": answer.mode, "model": answer.model, "errors": errors}
    return types.CallToolResult(content=[types.TextContent(type="text", text=answer.answer)],
                                structured_content=structured, is_error=False)


def _result(value: Any) -> types.CallToolResult:
    if isinstance(value, str):
        return types.CallToolResult(content=[types.TextContent(type="text", text=value)])
    text = json.dumps(value, ensure_ascii=False, default=str)
    structured = value if isinstance(value, dict) else None
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=structured)


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("saber")
    except PackageNotFoundError:
        return "0"


async def serve_stdio(agent: Any, *, include_mcp_tools: bool = True) -> None:
    """Serve over this process's stdin/stdout until the host closes them."""
    from mcp.server.stdio import stdio_server

    server = build_server(agent, include_mcp_tools=include_mcp_tools)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


async def serve_http(agent: Any, host: str, port: int, *, include_mcp_tools: bool = True, keys: KeyRing | None = None,
                     on_listening: Callable[[], None] | None = None) -> None:
    """Serve streamable HTTP at ``http://HOST:PORT/mcp`` until cancelled; with ``keys`` (not empty),
    only to requests with one of them. The socket is bound first, so a port in use is an OSError
    naming it (not a log line and an exit)."""
    import uvicorn

    from saber.server.listen import listen_socket

    sock = listen_socket(host, port)
    server = build_server(agent, include_mcp_tools=include_mcp_tools)
    app: Any = server.streamable_http_app(host=host)
    if keys is not None and keys.enabled:
        from saber.server.auth import KeyGate

        app = KeyGate(app, keys=keys)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    if on_listening is not None:
        on_listening()
    try:
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        sock.close()
