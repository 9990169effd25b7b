"""The arguments of tool mode's one call: the model's when there is one, the rules' otherwise.

With a model configured, the model is asked for the call: native function calling first (the
tool's JSON Schema sent as ``tools``); when the endpoint has no function calling (it rejects
``tools``, or answers in text), a JSON-in-prompt request. The arguments are validated by the
tool's own schema. The keyword rules are used only when the model fails (an error, no call, or
arguments the tool rejects): they are the no-model path, not the default.
"""

from __future__ import annotations

import json
from typing import Any

from saber.agent.context import Turn
from saber.events import Error
from saber.graph.node import Node
from saber.llm.text_tool_calls import extract_text_tool_calls, loads_lenient
from saber.llm.types import Message
from saber.planner import rule_plan
from saber.tools.base import Tool

_NATIVE = (
    "Call the tool {name} once with the arguments the user's request gives. Use places, names and values exactly "
    "as the user wrote them; do not substitute a default for something the user named. If the request does not "
    "give a required argument, answer with text asking for it instead of calling the tool."
)
_JSON = (
    "You choose the arguments of the tool {name}: {description}\nIts JSON Schema: {schema}\n"
    "Answer with one JSON object holding the arguments, nothing else. Use places, names and values exactly as the "
    "user wrote them. If the request does not give a required argument, answer {{}}."
)


def pick_tool_call(turn: Turn, tool_name: str) -> Node | None:
    """The single call the rules make of ``tool_name`` for this query, or None when they cannot
    (e.g. the weather without a city in the query or the preferences)."""
    tool = turn.tools.get(tool_name)
    if tool is None:
        return None
    plan = rule_plan(turn.query, {tool_name: tool}, preferences=turn.preferences)
    nodes = [n for n in plan.nodes if n.tool == tool_name]
    if not nodes and tool.is_mcp:  # the rules know only the built-ins: fill an MCP tool's by parameter names
        from saber.mcp.arguments import rule_arguments

        args = rule_arguments(turn.query, tool, turn.preferences, default_timezone=turn.services.settings.tools.default_timezone)
        return Node(id="n1", tool=tool_name, params=args) if args is not None else None
    return nodes[0] if len(nodes) == 1 else None


async def choose_tool_call(turn: Turn, tool_name: str) -> tuple[Node, bool] | None:
    """The call tool mode makes of ``tool_name``, and whether the model chose its arguments (None
    when neither the model nor the rules can fill it)."""
    if turn.has_model and tool_name in turn.tools:
        args = await model_arguments(turn, turn.tools[tool_name])
        if args is not None:
            return Node(id="n1", tool=tool_name, params=args), True
    node = pick_tool_call(turn, tool_name)
    return (node, False) if node is not None else None


_CORRECTION = (
    "Your call {name}({arguments}) does not fit my request: {reason}. Call {name} again with the values my request "
    "itself gives."
)


async def corrected_arguments(turn: Turn, node: Node, reason: str) -> dict[str, Any] | None:
    """The model's arguments for ``node``'s tool when asked again, told why its first call (``node``)
    does not fit the request; None when it fails or gives none."""
    tool = turn.tools.get(node.tool or "")
    if tool is None:
        return None
    arguments = json.dumps(node.params, ensure_ascii=False)
    return await model_arguments(turn, tool, correction=_CORRECTION.format(name=tool.name, arguments=arguments,
                                                                          reason=reason))


async def model_arguments(turn: Turn, tool: Tool, *, correction: str | None = None) -> dict[str, Any] | None:
    """Validated arguments from the model, or None (after an ``error`` event saying why) when it fails.
    ``correction`` (said after the query) asks again, saying what was wrong with an earlier call."""
    request = [Message.user(turn.query)] + ([Message.user(correction)] if correction else [])
    try:
        raw = await _native(turn, tool, request)
    except Exception as exc:  # an endpoint without function calling rejects ``tools``; any failure is the model's
        await turn.emit(Error(message=f"tool arguments: native function calling failed ({exc}); trying a JSON prompt",
                              where="tool"))
        raw = None
    try:
        if raw is None:
            raw = await _json_prompt(turn, tool, request)
        if raw is None:
            return None
        return tool.validate(raw)
    except Exception as exc:  # ModelError, a ToolArgumentError from validation, or a custom model's own failure
        await turn.emit(Error(message=f"tool arguments from the model unusable ({exc}); using the rules", where="tool"))
        return None


async def _native(turn: Turn, tool: Tool, request: list[Message]) -> dict[str, Any] | None:
    messages = [Message.system(_NATIVE.format(name=tool.name)), *request]
    completion = await turn.model.complete(messages, tools=[tool], temperature=0)
    turn.add_usage(completion.usage)
    calls = [c for c in completion.tool_calls if c.name == tool.name]
    if not calls and completion.text:
        found = extract_text_tool_calls(completion.text)
        calls = [c for c in (found.calls if found else ()) if c.name == tool.name]
    if calls:
        return dict(calls[0].arguments)
    return _object(completion.text) if completion.text.lstrip().startswith("{") else None


async def _json_prompt(turn: Turn, tool: Tool, request: list[Message]) -> dict[str, Any] | None:
    system = _JSON.format(name=tool.name, description=tool.description,
                          schema=json.dumps(tool.schema, ensure_ascii=False))
    completion = await turn.model.complete([Message.system(system), *request], temperature=0)
    turn.add_usage(completion.usage)
    return _object(completion.text)


def _object(text: str) -> dict[str, Any] | None:
    value, _ = loads_lenient(text.strip().removeprefix("```json").removeprefix("```").removesuffix("```"))
    if isinstance(value, dict) and value:
        return value
    return None
