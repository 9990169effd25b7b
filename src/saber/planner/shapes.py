"""Recognising the shape of a planner's JSON and turning it into raw node dicts.

Raw nodes use the ideal keys (id, type, tool, agent, goal, params, depends_on, race_group) but
are not validated yet: ``validate.py`` checks names, arguments, ids and edges.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from saber.llm.text_tool_calls import loads_lenient
from saber.llm.types import ToolCall
from saber.planner.answer_template import ANSWER_KEY, answer_item

RawNode = dict[str, Any]

_WRAPPER_KEYS = ("plan", "nodes", "tasks", "steps", "graph", "actions", "calls", "function_calls", "tool_calls", "task_graph")
_PARAM_KEYS = ("params", "parameters", "arguments", "args", "input", "tool_input", "action_input")
_GOAL_KEYS = ("goal", "reason", "description", "thought", "purpose", "task")
_DEP_KEYS = ("depends_on", "dependencies", "deps", "dependsOn", "depend_on")


@dataclass(frozen=True, kw_only=True, slots=True)
class Shape:
    name: str
    nodes: list[RawNode]
    answer: str | None = None
    """The reply the planner wrote ahead (``{"answer": "… $n1 …"}`` after the nodes, or an
    ``"answer"`` beside a wrapped plan), not checked yet: see ``answer_template``."""


def recognise(value: Any) -> Shape | None:
    """The plan in a decoded JSON value, or None when it holds no plan shape."""
    if isinstance(value, list):
        if not value:
            return Shape(name="ideal", nodes=[])
        items = [_item(v) for v in value]
        found = [i for i in items if i is not None]
        answers = [a for a in map(answer_item, value) if a is not None]
        answer = answers[-1] if answers else None
        if not found:  # a reply alone is a plan of no step ("no tool is needed")
            return Shape(name="ideal", nodes=[], answer=answer) if answer is not None else None
        return Shape(name=found[0][0], nodes=[node for _, node in found], answer=answer)
    if isinstance(value, Mapping):
        return _from_object(value)
    return None


def _from_object(obj: Mapping[str, Any]) -> Shape | None:
    if isinstance(obj.get("choices"), list) and obj["choices"]:  # a whole chat completion
        first = obj["choices"][0]
        if isinstance(first, Mapping) and isinstance(first.get("message"), Mapping):
            return _from_object(first["message"])
    if isinstance(obj.get("function_call"), Mapping):
        single = _item(obj["function_call"])
        return Shape(name="function_call", nodes=[single[1]]) if single else None
    for key in _WRAPPER_KEYS:
        inner = obj.get(key)
        if isinstance(inner, list):
            shape = recognise(inner)
            if shape is None:
                continue
            if key == "tool_calls" or shape.name == "openai_tool_calls":
                return Shape(name="openai_tool_calls", nodes=shape.nodes)
            beside = obj.get(ANSWER_KEY)
            answer = beside if isinstance(beside, str) and beside.strip() else shape.answer
            return replace(shape, name="wrapped", answer=answer)
        if isinstance(inner, Mapping) and key in ("plan", "graph", "task_graph"):
            nested = _from_object(inner)
            if nested is not None:
                return Shape(name="wrapped", nodes=nested.nodes)
    single = _item(obj)
    if single is None:
        return None
    name = "single_object" if single[0] == "ideal" else single[0]
    return Shape(name=name, nodes=[single[1]])


def _item(value: Any) -> tuple[str, RawNode] | None:
    """One node-like object: its shape name and the raw node."""
    if not isinstance(value, Mapping):
        return None
    if isinstance(value.get("function"), Mapping):  # OpenAI tool_calls entry
        fn = value["function"]
        name = fn.get("name")
        if not isinstance(name, str):
            return None
        return "openai_tool_calls", improvised(_node(value, tool=name, params=fn.get("arguments", fn.get("parameters"))))
    if value.get("type") == "tool_use" and isinstance(value.get("name"), str):  # Anthropic content block
        return "function_call", _node(value, tool=value["name"], params=value.get("input"))
    if isinstance(value.get("action"), str) and "action_input" in value:  # LangChain JSON agent
        return "react_action", _node(value, tool=value["action"], params=value["action_input"])
    tool = _first_str(value, ("tool", "tool_name", "toolName"))
    agent = _first_str(value, ("agent", "agent_name", "sub_agent"))
    if tool or agent or value.get("type") in ("tool", "sub_agent"):
        legacy = "id" not in value and "reason" in value and not any(k in value for k in _DEP_KEYS)
        return ("legacy" if legacy else "ideal"), _node(value, tool=tool, agent=agent)
    name = _first_str(value, ("name", "function_name"))
    if name and any(k in value for k in ("parameters", "arguments", "args", "input")):
        return "function_call", improvised(_node(value, tool=name))
    return None


def _first_str(value: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        item = value.get(key)
        if isinstance(item, str) and item.strip():
            return item.strip()
    return None


def _node(value: Mapping[str, Any], *, tool: str | None = None, agent: str | None = None, params: Any = None) -> RawNode:
    if params is None:
        params = next((value[k] for k in _PARAM_KEYS if k in value), None)
    deps = next((value[k] for k in _DEP_KEYS if k in value), None)
    node_type = value.get("type") if value.get("type") in ("tool", "sub_agent") else None
    return {
        "id": value.get("id", value.get("node_id", value.get("step"))),
        "type": node_type,
        "tool": tool,
        "agent": agent,
        "goal": _first_str(value, _GOAL_KEYS) or "",
        "params": params,
        "depends_on": deps,
        "race_group": value.get("race_group", value.get("raceGroup")),
    }


def from_tool_calls(calls: tuple[ToolCall, ...] | list[ToolCall]) -> list[RawNode]:
    """Raw nodes for calls made in a text dialect or natively."""
    return [
        improvised({"id": None, "type": None, "tool": call.name, "agent": None, "goal": "",
                    "params": dict(call.arguments), "depends_on": None, "race_group": None})
        for call in calls
    ]


def improvised(node: RawNode) -> RawNode:
    """A call whose arguments carry graph fields (``{"id", "params", "depends_on"}``): models
    asked for a graph but held to function calling sometimes write that."""
    args = node.get("params")
    if not (isinstance(args, Mapping) and isinstance(args.get("params"), Mapping)
            and set(args) & {"id", "depends_on", "race_group"}):
        return node
    goal = args.get("goal")
    return {**node, "id": args.get("id", node.get("id")), "params": dict(args["params"]),
            "goal": goal if isinstance(goal, str) else node.get("goal", ""),
            "depends_on": args.get("depends_on"), "race_group": args.get("race_group")}


def params_object(params: Any) -> tuple[dict[str, Any] | None, str | None]:
    """``(params, problem)``: an object, a JSON text of one, or nothing."""
    if params is None or params == "":
        return {}, None
    if isinstance(params, Mapping):
        return dict(params), None
    if isinstance(params, str):
        try:
            decoded = json.loads(params)
        except ValueError:
            decoded, _ = loads_lenient(params)
        if isinstance(decoded, Mapping):
            return dict(decoded), None
    return None, f"params must be an object, got {type(params).__name__}"
