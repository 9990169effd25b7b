"""Issue 9, item 10: only lossless coercions ("3" -> 3, "true"/"false" -> bool); unknown keys reported."""

from __future__ import annotations

from typing import Any

import pytest

from saber.tools import Tool, ToolArgumentError, tool
from saber.tools.coerce import unknown_keys


def echo(args: dict[str, Any]) -> dict[str, Any]:
    return args


SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}, "x": {"type": "number"}, "b": {"type": "boolean"},
                                          "level": {"enum": [0, 1, 2]}}}


@pytest.mark.parametrize("bad", [{"n": True}, {"x": False}, {"b": "yes"}, {"b": "1"}, {"b": "on"}, {"b": 1},
                                 {"b": 0}, {"level": True}])
def test_lossy_forms_are_refused_by_schema_tools(bad: dict[str, Any]) -> None:
    t = Tool.from_json_schema("t", "", SCHEMA, echo)
    field = next(iter(bad))
    with pytest.raises(ToolArgumentError, match=rf"{field}:"):
        t.validate(bad)


def test_lossless_forms_still_convert() -> None:
    t = Tool.from_json_schema("t", "", SCHEMA, echo)
    assert t.validate({"n": "3", "x": "2.5", "b": "false", "level": "1"}) == {"n": 3, "x": 2.5, "b": False, "level": 1}


@tool
def count(n: int, flag: bool = False) -> str:
    """Count."""
    return f"{n}{flag}"


@pytest.mark.parametrize("bad", [{"n": True}, {"n": 1, "flag": "yes"}, {"n": 1, "flag": "on"}, {"n": 1, "flag": 1}])
def test_lossy_forms_are_refused_by_function_tools(bad: dict[str, Any]) -> None:
    with pytest.raises(ToolArgumentError):
        count.validate(bad)


def test_function_tools_keep_lossless_forms() -> None:
    assert count.validate({"n": "3", "flag": "true"}) == {"n": 3, "flag": True}


def test_unknown_keys_are_named() -> None:
    assert unknown_keys(SCHEMA, {"n": 1, "reason": "because", "colour": 2}) == ["reason", "colour"]


def test_a_strict_tool_refuses_unknown_keys() -> None:
    strict = Tool.from_json_schema("s", "", {**SCHEMA, "additionalProperties": False}, echo)
    with pytest.raises(ToolArgumentError, match="reason: unknown field"):
        strict.validate({"n": 1, "reason": "x"})


def test_the_planner_is_told_about_unknown_arguments() -> None:
    from saber.planner import parse_plan

    t = Tool.from_json_schema("t", "", SCHEMA, echo)
    plan = parse_plan('[{"id": "n1", "tool": "t", "params": {"n": 1, "colour": "red"}}]', {"t": t})
    assert any("'colour' is not a parameter of t" in w for w in plan.warnings)
