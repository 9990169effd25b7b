"""Tool.from_json_schema: how MCP and OpenAPI tools arrive; coercion and errors."""

from __future__ import annotations

from typing import Any

import pytest

from saber.tools import Tool, ToolArgumentError

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "value": {"type": "number", "minimum": 0, "description": "Amount to convert"},
        "to": {"type": "string", "enum": ["km", "mi"]},
        "options": {
            "type": "object",
            "properties": {"round": {"type": "boolean", "default": True}, "digits": {"type": "integer", "maximum": 10}},
        },
        "tags": {"type": "array", "items": {"type": "integer"}, "maxItems": 3},
        "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        "ref": {"$ref": "#/$defs/Point"},
    },
    "required": ["value", "to"],
    "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x"]}},
}


def echo(args: dict[str, Any]) -> dict[str, Any]:
    return args


@pytest.fixture
def convert() -> Tool:
    return Tool.from_json_schema("convert", "Convert units", SCHEMA, echo, is_mcp=True)


def test_coercion_of_nested_values(convert: Tool) -> None:
    out = convert.validate({"value": "3.5", "to": "KM", "options": {"digits": "2"}, "tags": ["1", 2], "ref": {"x": "1"}})
    assert out == {
        "value": 3.5, "to": "km", "options": {"digits": 2, "round": True}, "tags": [1, 2], "limit": None, "ref": {"x": 1},
    }


def test_integer_strings_stay_strings_where_a_string_is_allowed() -> None:
    t = Tool.from_json_schema("t", "", {"type": "object", "properties": {"v": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}}, echo)
    assert t.validate({"v": "3"}) == {"v": "3"}
    assert t.validate({"v": 3}) == {"v": 3}


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"to": "km"}, "value: field required"),
        ({"value": -1, "to": "km"}, "value: must be ≥ 0"),
        ({"value": 1, "to": "yd"}, 'to: must be one of "km", "mi"'),
        ({"value": 1, "to": "km", "tags": ["a"]}, "tags[0]: expected integer"),
        ({"value": 1, "to": "km", "tags": [1, 2, 3, 4]}, "tags: takes at most 3 items"),
        ({"value": 1, "to": "km", "options": {"digits": 11}}, "options.digits: must be ≤ 10"),
        ({"value": 1, "to": "km", "ref": {}}, "ref.x: field required"),
        ({"value": 1, "to": "km", "limit": "many"}, "limit: does not match any allowed form"),
        ({"value": True, "to": "km"}, "value: expected number"),
    ],
)
def test_errors_name_the_field(convert: Tool, arguments: dict[str, Any], expected: str) -> None:
    with pytest.raises(ToolArgumentError) as info:
        convert.validate(arguments)
    assert expected in str(info.value)
    assert not info.value.retryable


def test_all_errors_reported_at_once(convert: Tool) -> None:
    with pytest.raises(ToolArgumentError) as info:
        convert.validate({"tags": ["x"]})
    assert len(info.value.errors) == 3


def test_json_text_for_object_and_array(convert: Tool) -> None:
    out = convert.validate({"value": 1, "to": "mi", "tags": "[1, 2]", "options": '{"round": false}'})
    assert out["tags"] == [1, 2] and out["options"] == {"round": False}


@pytest.mark.parametrize(("text", "expected"), [("true", True), ("TRUE", True), ("False", False), (" false ", False)])
def test_boolean_strings(text: str, expected: bool) -> None:
    t = Tool.from_json_schema("t", "", {"type": "object", "properties": {"b": {"type": "boolean"}}}, echo)
    assert t.validate({"b": text}) == {"b": expected}


def test_unsafe_conversions_rejected() -> None:
    t = Tool.from_json_schema("t", "", {"type": "object", "properties": {"n": {"type": "integer"}, "b": {"type": "boolean"}}}, echo)
    for bad in ({"n": "3.5"}, {"n": 3.5}, {"b": "maybe"}, {"b": 2}):
        with pytest.raises(ToolArgumentError):
            t.validate(bad)
    assert t.validate({"n": 4.0}) == {"n": 4}


def test_parameters_and_prompt_line(convert: Tool) -> None:
    params = {p.name: p for p in convert.parameters}
    assert params["value"].type == "number" and params["value"].required
    assert params["tags"].type == "array of integer"
    assert params["limit"].type == "integer|null"
    assert params["ref"].type == "object"
    line = convert.to_prompt_line()
    assert line.startswith("- convert: Convert units [params: value(number, required; Amount to convert)")
    assert "to(string, required, one of km/mi)" in line


def test_schema_must_describe_an_object() -> None:
    with pytest.raises(ValueError, match="must describe an object"):
        Tool.from_json_schema("t", "", {"type": "array"}, echo)


def test_empty_schema_accepts_no_arguments() -> None:
    t = Tool.from_json_schema("ping", "Ping", None, echo)
    assert t.validate(None) == {}
    assert t.to_prompt_line() == "- ping: Ping [params: none]"


@pytest.mark.parametrize("bad", ["9" * 5000, "٣", "1_000", "１２"])
def test_numbers_must_be_plain_ascii(bad: str) -> None:
    t = Tool.from_json_schema("t", "", {"type": "object", "properties": {"n": {"type": "integer"}, "x": {"type": "number"}}}, echo)
    for field in ("n", "x"):
        with pytest.raises(ToolArgumentError, match=f"{field}: expected"):
            t.validate({field: bad})
    assert t.validate({"n": "-12", "x": "1.5e3"}) == {"n": -12, "x": 1500.0}


def test_additional_properties_false_names_the_unknown_field() -> None:
    schema = {"type": "object", "properties": {"max_results": {"type": "integer", "default": 5}}, "additionalProperties": False}
    t = Tool.from_json_schema("t", "", schema, echo)
    with pytest.raises(ToolArgumentError, match="max_result: unknown field \\(did you mean 'max_results'\\?\\)"):
        t.validate({"max_result": 50})
