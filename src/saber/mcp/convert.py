"""MCP tools as Saber ``Tool``s, and MCP call results as tool results.

A tool's ``inputSchema`` goes through ``Tool.from_json_schema``, so planner prompts, native
function calling and argument validation treat it like a built-in: bad arguments are rejected
before the server is called, with a message naming the field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types

from saber.tools.base import Tool
from saber.tools.errors import ToolError

Caller = Callable[[str, dict[str, Any]], Awaitable[types.CallToolResult]]

_BAD_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")


def saber_name(name: str) -> str:
    """A name the registry accepts: characters outside ``[A-Za-z0-9_.-]`` become ``_``."""
    cleaned = _BAD_NAME_CHARS.sub("_", name).strip("_") or "tool"
    return cleaned[:128]


def to_tool(remote: types.Tool, name: str, call: Caller) -> Tool:
    """``remote`` registered as ``name``; executing it calls the server's ``remote.name``."""
    remote_name = remote.name

    async def execute(args: dict[str, Any]) -> Any:
        return result_value(remote_name, await call(remote_name, args))

    description = (remote.description or remote.title or remote_name).strip()
    return Tool.from_json_schema(name, description, _object_schema(remote.input_schema), execute, is_mcp=True,
                                 idempotent=idempotent(remote))


def idempotent(remote: types.Tool) -> bool:
    """What the server's annotations promise: ``readOnlyHint`` or ``idempotentHint``. Without
    them a call may have side effects, so it is not retried after a timeout (MCP's defaults are
    the same: not read-only, not idempotent)."""
    hints = remote.annotations
    return hints is not None and (hints.read_only_hint is True or hints.idempotent_hint is True)


def _object_schema(schema: Any) -> dict[str, Any]:
    """The input schema as an object schema; servers sometimes send ``{}`` or leave out ``type``."""
    body = dict(schema) if isinstance(schema, dict) else {}
    if body.get("type") not in (None, "object"):
        return {"type": "object", "properties": {"value": body}, "required": ["value"]}
    body["type"] = "object"
    if not isinstance(body.get("properties"), dict):
        body["properties"] = {}
    return body


def result_value(tool: str, result: types.CallToolResult) -> Any:
    """Structured content when the server gives it, else the text (JSON text parsed); an error
    result is a non-retryable ToolError carrying the server's message."""
    text = content_text(result.content)
    if result.is_error:
        raise ToolError(text or f"{tool} failed (the server gave no message)", retryable=False)
    if result.structured_content is not None:
        return result.structured_content
    stripped = text.strip()
    if stripped[:1] in ("{", "[") and len(result.content) == 1:
        try:
            return json.loads(stripped)
        except ValueError:
            pass
    return text


def content_text(content: list[Any]) -> str:
    """Text blocks joined; other blocks (images, audio, resources) named, not dropped silently."""
    parts: list[str] = []
    for block in content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.EmbeddedResource):
            inner = block.resource
            parts.append(getattr(inner, "text", None) or f"[resource {inner.uri}]")
        elif isinstance(block, types.ResourceLink):
            parts.append(f"[resource {block.uri}]")
        else:
            parts.append(f"[{getattr(block, 'type', 'content')} {getattr(block, 'mime_type', '')}]".replace(" ]", "]"))
    return "\n".join(parts)
