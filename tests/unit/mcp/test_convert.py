"""MCP tools and results as Saber tools and tool results (schemas as real servers send them)."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest

from saber.mcp.convert import content_text, result_value, saber_name, to_tool
from saber.tools import ToolArgumentError, ToolError


async def never(name: str, args: dict[str, Any]) -> types.CallToolResult:
    raise AssertionError("not called")


def remote(name: str, schema: dict[str, Any], description: str | None = "A tool.") -> types.Tool:
    return types.Tool(name=name, description=description, input_schema=schema)


def test_schemas_real_servers_send() -> None:
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
              "properties": {"location": {"type": "string", "enum": ["New York", "Chicago"]},
                             "count": {"type": "number", "minimum": 1, "default": 3}},
              "required": ["location"], "additionalProperties": False}
    t = to_tool(remote("get-structured-content", draft7), "get-structured-content", never)
    assert t.is_mcp and [(p.name, p.required, p.enum) for p in t.parameters] == [
        ("location", True, ["New York", "Chicago"]), ("count", False, None)]
    with pytest.raises(ToolArgumentError, match="location"):
        t.validate({"location": "Atlantis"})
    pydantic_style = {"type": "object", "title": "Args", "$defs": {"Unit": {"enum": ["c", "f"], "type": "string"}},
                      "properties": {"unit": {"$ref": "#/$defs/Unit"}}, "required": ["unit"]}
    t = to_tool(remote("temp", pydantic_style), "temp", never)
    assert t.validate({"unit": "c"}) == {"unit": "c"}
    with pytest.raises(ToolArgumentError, match="unit"):
        t.validate({"unit": "kelvin"})
    empty = to_tool(remote("ping", {}), "ping", never)
    assert empty.schema["type"] == "object" and empty.parameters == [] and empty.validate({}) == {}
    bare = to_tool(remote("x", {"type": "object"}, description=None), "x", never)
    assert bare.description == "x"


def test_names_the_registry_accepts() -> None:
    assert saber_name("get-sum") == "get-sum"
    assert saber_name("files/read file") == "files_read_file"
    assert saber_name("工具") == "tool"


def text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


def test_results() -> None:
    assert result_value("t", types.CallToolResult(content=[text("plain")])) == "plain"
    assert result_value("t", types.CallToolResult(content=[text('{"a": 1}')])) == {"a": 1}
    structured = types.CallToolResult(content=[text("A is 1")], structured_content={"a": 1})
    assert result_value("t", structured) == {"a": 1}
    assert result_value("t", types.CallToolResult(content=[text("one"), text("two")])) == "one\ntwo"
    with pytest.raises(ToolError) as failed:
        result_value("t", types.CallToolResult(content=[text("Invalid timezone: Mars")], is_error=True))
    assert str(failed.value) == "Invalid timezone: Mars" and not failed.value.retryable
    with pytest.raises(ToolError, match="t failed"):
        result_value("t", types.CallToolResult(content=[], is_error=True))


def test_other_content_is_named_not_dropped() -> None:
    image = types.ImageContent(type="image", data="aGk=", mime_type="image/png")
    link = types.ResourceLink(type="resource_link", uri="file:///a.txt", name="a")
    assert content_text([text("see"), image, link]) == "see\n[image image/png]\n[resource file:///a.txt]"


@pytest.mark.parametrize(("hints", "idempotent"), [
    (None, False),
    (types.ToolAnnotations(), False),
    (types.ToolAnnotations(destructive_hint=True), False),
    (types.ToolAnnotations(read_only_hint=True), True),
    (types.ToolAnnotations(read_only_hint=False, idempotent_hint=True), True),
    (types.ToolAnnotations(idempotent_hint=False), False),
])
def test_only_tools_the_server_calls_read_only_or_idempotent_are_retried(
        hints: types.ToolAnnotations | None, idempotent: bool) -> None:
    described = types.Tool(name="act", description="Acts.", input_schema={"type": "object"}, annotations=hints)
    assert to_tool(described, "act", never).idempotent is idempotent
