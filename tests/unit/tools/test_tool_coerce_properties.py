"""Argument coercion as a tool meets it: what a model writes for a typed field is converted when
nothing is lost ("3" → 3) and refused otherwise, with the field and the reason in the message."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from saber.tools import Tool, ToolArgumentError
from saber.tools.coerce import SchemaErrors, coerce_arguments, lossy_conversions, unknown_keys


def echo(args: dict[str, Any]) -> dict[str, Any]:
    return args


def tool(props: dict[str, Any], **schema: Any) -> Tool:
    return Tool.from_json_schema("t", "", {"type": "object", "properties": props, **schema}, echo)


def refused(t: Tool, args: Any) -> str:
    with pytest.raises(ToolArgumentError) as caught:
        t.validate(args)
    return str(caught.value).removeprefix("t: ")


INT = tool({"n": {"type": "integer"}})
NUM = tool({"x": {"type": "number"}})
BOOL = tool({"b": {"type": "boolean"}})
TEXT = tool({"s": {"type": "string"}})


@given(st.integers(min_value=-(10**39), max_value=10**39), st.sampled_from(["", " "]))
def test_an_integer_written_as_text_is_that_integer(n: int, pad: str) -> None:
    assert INT.validate({"n": f"{pad}{n}{pad}"}) == {"n": n}
    assert INT.validate({"n": f"+{abs(n)}"}) == {"n": abs(n)}
    assert INT.validate({"n": n}) == {"n": n} and INT.validate({"n": float(n)}) == {"n": int(float(n))}


@given(st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer()))
def test_a_fraction_is_no_integer_and_the_message_shows_it(x: float) -> None:
    assert refused(INT, {"n": x}) == f"n: expected integer, got {json.dumps(x)[:37] + '...' if len(json.dumps(x)) > 40 else json.dumps(x)}"
    assert refused(INT, {"n": str(x)}).startswith("n: expected integer, got ")


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_number_written_as_text_is_that_number(x: float) -> None:
    out = NUM.validate({"x": repr(x)})["x"]
    assert out == x and isinstance(out, float | int)
    assert NUM.validate({"x": x}) == {"x": x}


@pytest.mark.parametrize("bad", ["inf", "-Infinity", "nan", "1e999", "1_000", "٣", "0x10", "", " ", "1,5", "e5",
                                 "1" * 65, True, None, [1], {"v": 1}])
def test_what_is_not_a_finite_number_is_refused_naming_the_field(bad: Any) -> None:
    assert refused(NUM, {"x": bad}).startswith("x: expected number, got ")


def test_number_text_keeps_integers_whole() -> None:
    assert NUM.validate({"x": "12"}) == {"x": 12} and isinstance(NUM.validate({"x": " 12 "})["x"], int)
    assert NUM.validate({"x": "1e3"}) == {"x": 1000.0} and NUM.validate({"x": ".5"}) == {"x": 0.5}
    assert NUM.validate({"x": "-2."}) == {"x": -2.0}


@given(st.sampled_from(["true", "false"]), st.sampled_from([str.upper, str.lower, str.title]), st.sampled_from(["", " "]))
def test_true_and_false_in_any_case_are_booleans(word: str, case: Any, pad: str) -> None:
    assert BOOL.validate({"b": pad + case(word) + pad}) == {"b": word == "true"}


@given(st.text(max_size=8).filter(lambda t: t.strip().lower() not in ("true", "false")))
def test_any_other_text_is_no_boolean(text: str) -> None:
    assert refused(BOOL, {"b": text}).startswith("b: expected boolean, got ")
    assert lossy_conversions(BOOL.schema, {"b": text}) == [f"b: expected boolean, got {json.dumps(text, ensure_ascii=False)}"
                                                          if len(json.dumps(text, ensure_ascii=False)) <= 40 else
                                                          f"b: expected boolean, got {json.dumps(text, ensure_ascii=False)[:37]}..."]


@given(st.integers() | st.floats(allow_nan=False, allow_infinity=False))
def test_a_number_where_text_is_wanted_becomes_its_text_and_a_boolean_does_not(n: float) -> None:
    assert TEXT.validate({"s": n}) == {"s": str(n)}
    assert refused(TEXT, {"s": True}) == "s: expected string, got true"


@given(st.lists(st.integers(), max_size=4), st.dictionaries(st.text(max_size=4), st.integers(), max_size=3))
def test_an_array_or_object_written_as_json_text_is_decoded(items: list[int], obj: dict[str, int]) -> None:
    t = tool({"a": {"type": "array", "items": {"type": "integer"}}, "o": {"type": "object"}})
    assert t.validate({"a": json.dumps(items), "o": json.dumps(obj)}) == {"a": items, "o": obj}
    assert refused(t, {"a": json.dumps(obj)}).startswith("a: expected array, got ")
    assert refused(t, {"o": "{not json"}).startswith("o: expected object, got ")


def test_bounds_are_checked_with_the_bound_in_the_message() -> None:
    t = tool({"n": {"type": "integer", "minimum": 1, "maximum": 5}, "x": {"type": "number", "exclusiveMinimum": 0,
                                                                        "exclusiveMaximum": 1}})
    assert t.validate({"n": 1, "x": 0.5}) == {"n": 1, "x": 0.5} and t.validate({"n": "5"}) == {"n": 5}
    assert refused(t, {"n": 0}) == "n: must be ≥ 1, got 0"
    assert refused(t, {"n": 6}) == "n: must be ≤ 5, got 6"
    assert refused(t, {"x": 0}) == "x: must be > 0, got 0"
    assert refused(t, {"x": 1}) == "x: must be < 1, got 1"
    assert tool({"n": {"type": "integer", "minimum": "1"}}).validate({"n": -4}) == {"n": -4}  # a bound that is no number


def test_text_length_and_pattern_are_checked() -> None:
    t = tool({"s": {"type": "string", "minLength": 2, "maxLength": 3, "pattern": "^[a-z]+$"}})
    assert t.validate({"s": "ab"}) == {"s": "ab"} and t.validate({"s": "abc"}) == {"s": "abc"}
    assert refused(t, {"s": "a"}) == "s: must have at least 2 characters"
    assert refused(t, {"s": "abcd"}) == "s: must have at most 3 characters"
    assert refused(t, {"s": "AB"}) == "s: does not match pattern '^[a-z]+$'"


def test_every_bad_field_is_named_at_once_with_its_path() -> None:
    t = tool({"trip": {"type": "object", "properties": {"stops": {"type": "array", "minItems": 1, "maxItems": 2,
                                                                  "items": {"type": "object", "required": ["city"],
                                                                            "properties": {"city": {"type": "string"}}}}}},
              "when": {"type": "string"}}, required=["trip", "when"])
    message = refused(t, {"trip": {"stops": [{"city": "a"}, {}, {"city": 3.5}]}})
    assert message == ("trip.stops[1].city: field required; trip.stops: takes at most 2 items, got 3; "
                       "when: field required")
    assert refused(t, {"trip": {"stops": []}, "when": 1}) == "trip.stops: needs at least 1 items, got 0"


def test_an_enum_takes_the_allowed_spelling_but_never_a_boolean_for_a_number() -> None:
    t = tool({"unit": {"enum": ["Celsius", "Fahrenheit"]}, "level": {"enum": [0, 1, 2]}, "flag": {"enum": [True, "auto"]}})
    assert t.validate({"unit": "celsius", "level": "2", "flag": True}) == {"unit": "Celsius", "level": 2, "flag": True}
    assert t.validate({"unit": "Celsius", "level": 1}) == {"unit": "Celsius", "level": 1}
    assert refused(t, {"level": True}) == "level: must be one of 0, 1, 2; got true"
    assert refused(t, {"flag": 1}) == 'flag: must be one of true, "auto"; got 1'
    assert refused(t, {"unit": "kelvin"}) == 'unit: must be one of "Celsius", "Fahrenheit"; got "kelvin"'


def test_const_defaults_and_null() -> None:
    t = tool({"v": {"const": "v1"}, "tags": {"type": "array", "default": ["a"]}, "note": {"type": ["string", "null"]}})
    first = t.validate({"v": "v1", "note": None})
    assert first == {"v": "v1", "note": None, "tags": ["a"]}
    first["tags"].append("b")
    assert t.validate({})["tags"] == ["a"]  # each call gets its own copy of the default
    assert refused(t, {"v": "v2"}) == 'v: must be "v1", got "v2"'
    assert refused(tool({"n": {"type": "integer"}}), {"n": None}) == "n: expected integer, got null"


def test_a_union_keeps_a_value_that_already_fits_and_converts_one_that_does_not() -> None:
    t = tool({"id": {"anyOf": [{"type": "integer"}, {"type": "string"}]}, "n": {"oneOf": [{"type": "integer"},
                                                                                           {"type": "null"}]}})
    assert t.validate({"id": "3", "n": "4"}) == {"id": "3", "n": 4}
    assert t.validate({"id": 3, "n": None}) == {"id": 3, "n": None}
    assert refused(t, {"n": "four"}) == 'n: does not match any allowed form (expected integer, got "four")'


def test_refs_into_defs_and_all_of_are_followed() -> None:
    t = Tool.from_json_schema("t", "", {
        "type": "object", "$defs": {"City": {"type": "object", "properties": {"name": {"type": "string"}},
                                             "required": ["name"]}},
        "properties": {"city": {"$ref": "#/$defs/City"}, "n": {"allOf": [{"type": "integer", "minimum": 2}]},
                       "far": {"$ref": "http://example.com/x"}}}, echo)
    assert t.validate({"city": {"name": "Oslo"}, "n": "3", "far": 1}) == {"city": {"name": "Oslo"}, "n": 3, "far": 1}
    assert refused(t, {"city": {}}) == "city.name: field required"
    assert refused(t, {"n": "1"}) == "n: must be ≥ 2, got 1"


def test_unknown_fields_are_refused_with_a_suggestion_where_the_schema_says_so() -> None:
    strict = tool({"city": {"type": "string"}}, additionalProperties=False)
    assert refused(strict, {"cty": "x"}) == "cty: unknown field (did you mean 'city'?)"
    assert refused(strict, {"zzz": "x"}) == "zzz: unknown field"
    typed = tool({}, additionalProperties={"type": "integer"})
    assert typed.validate({"a": "1"}) == {"a": 1} and refused(typed, {"a": "x"}).startswith("a: expected integer")
    assert tool({}).validate({"free": "form"}) == {"free": "form"}


def test_arguments_that_are_no_object_are_refused() -> None:
    assert INT.validate(None) == {}
    with pytest.raises(ToolArgumentError, match="arguments must be an object, got list"):
        INT.validate([1])  # type: ignore[arg-type]


def test_lossy_conversions_and_unknown_keys_are_reported_by_name() -> None:
    schema = {"properties": {"n": {"type": "integer"}, "b": {"type": "boolean"}, "s": {"type": ["string", "boolean"]},
                             "any": {}}}
    assert lossy_conversions(schema, {"n": True, "b": 1, "s": "yes", "any": 3}) == [
        "n: expected integer, got true", "b: expected boolean, got 1"]
    assert lossy_conversions(schema, {"n": 3, "b": "true"}) == []
    assert lossy_conversions(schema, "text") == [] and unknown_keys(schema, [1]) == []
    assert unknown_keys({"properties": "bad"}, {"a": 1}) == [] and unknown_keys(schema, {"n": 1, "z": 2}) == ["z"]


def test_a_long_value_is_shown_cut_in_the_message() -> None:
    message = refused(INT, {"n": "x" * 100})
    assert message == f'n: expected integer, got "{"x" * 36}...' and not math.isnan(len(message))


def test_no_arguments_are_an_empty_object_and_a_non_object_is_refused_as_arguments() -> None:
    assert coerce_arguments({"type": "object", "properties": {}}, None) == {}
    with pytest.raises(SchemaErrors) as caught:
        coerce_arguments({}, [1, 2])
    assert caught.value.errors == ["arguments: expected an object, got [1, 2]"]
    with pytest.raises(SchemaErrors) as caught:
        coerce_arguments({"type": "object"}, "text")
    assert caught.value.errors == ['arguments: expected object, got "text"']


def test_a_value_json_cannot_write_is_still_shown_in_the_message() -> None:
    when = datetime(2026, 1, 2, tzinfo=UTC)
    assert refused(INT, {"n": when}) == 'n: expected integer, got "2026-01-02 00:00:00+00:00"'


def test_values_up_to_forty_characters_are_shown_whole() -> None:
    assert refused(INT, {"n": "y" * 38}) == f'n: expected integer, got "{"y" * 38}"'
    assert refused(INT, {"n": "y" * 39}) == f'n: expected integer, got "{"y" * 36}...'


def test_refs_follow_chains_survive_cycles_and_bad_targets() -> None:
    defs = {f"D{i}": {"$ref": f"#/$defs/D{i + 1}"} for i in range(31)} | {"D31": {"type": "integer"}}
    deep = Tool.from_json_schema("t", "", {"type": "object", "$defs": defs, "properties": {"n": {"$ref": "#/$defs/D0"}}}, echo)
    assert deep.validate({"n": "7"}) == {"n": 7} and refused(deep, {"n": "x"}).startswith("n: expected integer")
    loop = Tool.from_json_schema("t", "", {"type": "object", "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}},
                                           "properties": {"a": {"$ref": "#/$defs/A"}}}, echo)
    assert loop.validate({"a": 1}) == {"a": 1}  # a cycle ends; nothing is known of the value
    odd = Tool.from_json_schema("t", "", {"type": "object", "$defs": {"S": {"type": "string"}},
                                          "properties": {"a": {"$ref": "#/$defs/S/type/x"}, "b": {"$ref": "#/$defs/None"}}},
                                echo)
    assert odd.validate({"a": 1, "b": [2]}) == {"a": 1, "b": [2]}


def test_keys_beside_a_ref_apply_too() -> None:
    t = Tool.from_json_schema("t", "", {"type": "object", "$defs": {"Unit": {"enum": ["c", "f"]}},
                                        "properties": {"unit": {"$ref": "#/$defs/Unit", "default": "c"}}}, echo)
    assert t.validate({}) == {"unit": "c"} and refused(t, {"unit": "k"}) == 'unit: must be one of "c", "f"; got "k"'


def test_a_union_error_names_the_nested_field_and_options_may_be_refs() -> None:
    t = Tool.from_json_schema("t", "", {"type": "object", "$defs": {"Int": {"type": "integer"}}, "properties": {
        "trip": {"type": "object", "properties": {"max days": {"anyOf": [{"$ref": "#/$defs/Int"}, {"type": "null"}]}}}}}, echo)
    assert t.validate({"trip": {"max days": "4"}}) == {"trip": {"max days": 4}}
    assert refused(t, {"trip": {"max days": "a: b"}}) == (
        'trip.max days: does not match any allowed form (expected integer, got "a: b")')


def test_a_list_of_types_keeps_a_value_of_one_of_them_whatever_their_order() -> None:
    for types in (["integer", "string"], ["string", "integer"]):
        t = tool({"v": {"type": types}})
        assert t.validate({"v": "3"}) == {"v": "3"} and t.validate({"v": 3}) == {"v": 3}
    assert refused(tool({"v": {"type": ["integer", "null"]}}), {"v": "x"}) == 'v: expected integer or null, got "x"'


def test_nested_unknown_fields_are_named_with_their_path() -> None:
    t = tool({"outer": {"type": "object", "properties": {"city": {"type": "string"}}, "additionalProperties": False},
              "extra": {"type": "object", "additionalProperties": {"type": "integer"}}})
    assert refused(t, {"outer": {"cty": "x"}}) == "outer.cty: unknown field (did you mean 'city'?)"
    assert refused(t, {"extra": {"k": "x"}}) == 'extra.k: expected integer, got "x"'


def test_a_nested_default_is_copied_for_each_call() -> None:
    t = tool({"opts": {"type": "object", "default": {"tags": ["a"]}}})
    first = t.validate({})
    first["opts"]["tags"].append("b")
    assert t.validate({}) == {"opts": {"tags": ["a"]}}


def test_array_bounds_are_inclusive_and_items_without_a_schema_are_kept() -> None:
    t = tool({"a": {"type": "array", "minItems": 1, "maxItems": 2}})
    assert t.validate({"a": [1]}) == {"a": [1]} and t.validate({"a": [1, "x"]}) == {"a": [1, "x"]}


def test_an_enum_matches_numbers_by_value_and_skips_a_boolean_option_for_text() -> None:
    t = tool({"r": {"enum": [1.5, 2.0]}, "flag": {"enum": [True, "auto"]}})
    assert t.validate({"r": 2, "flag": "AUTO"}) == {"r": 2, "flag": "auto"}


def test_lossy_conversions_are_only_the_lossy_ones() -> None:
    schema = {"properties": {"b": {"type": "boolean"}, "x": {"type": "number"}, "m": {"type": ["integer", "null"]}}}
    assert lossy_conversions(schema, {"b": True, "x": 2.5}) == [] and lossy_conversions(schema, {"b": "false"}) == []
    assert lossy_conversions(schema, {"x": True, "m": False}) == ["x: expected number, got true",
                                                                  "m: expected integer or null, got false"]
    assert lossy_conversions({"properties": "bad"}, {"a": 1}) == []
    assert unknown_keys({"type": "object"}, {"a": 1}) == ["a"]


def test_an_object_field_refuses_what_is_neither_an_object_nor_its_json() -> None:
    t = tool({"o": {"type": "object"}, "x": {"type": "number"}})
    assert refused(t, {"o": 5}) == "o: expected object, got 5"
    assert t.validate({"x": "0." + "1" * 62}) == {"x": float("0." + "1" * 62)}  # 64 characters
