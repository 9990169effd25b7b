"""The reply a planner writes ahead (``{"answer": "… $n1 …"}`` after its nodes): kept only when it
matches the plan as the model wrote it, and filled only with results that exist."""

from __future__ import annotations

import json
from typing import Any

from saber.planner import build_planner_prompt, parse_plan
from saber.planner.answer_template import fill_template
from saber.planner.incremental import IncrementalPlanParser
from saber.tools import Tool


def _noop(args: dict[str, Any]) -> Any:
    raise AssertionError


def _tool(name: str, param: str) -> Tool:
    return Tool.from_json_schema(name, name, {"properties": {param: {"type": "string"}}, "required": [param]}, _noop)


TOOLS = {t.name: t for t in (_tool("lookup_capital", "country"), _tool("get_weather", "city"), _tool("get_time", "timezone"))}
CHAIN = [{"id": "n1", "tool": "lookup_capital", "params": {"country": "Japan"}},
         {"id": "n2", "tool": "get_weather", "params": {"city": "$n1"}}]


def _plan(*items: dict[str, Any]) -> str:
    return json.dumps(list(items), ensure_ascii=False, separators=(",", ":"))


def test_a_template_after_the_nodes_is_kept_in_canonical_form_and_the_nodes_are_unchanged() -> None:
    plan = parse_plan(_plan(*CHAIN, {"answer": "The capital is $n1; weather: ${n2}."}), TOOLS)
    assert [(n.id, n.params, n.depends_on) for n in plan.nodes] == [
        ("n1", {"country": "Japan"}, []), ("n2", {"city": "${n1}"}, ["n1"])]  # the placeholder is the dependency
    assert plan.answer == "The capital is ${n1}; weather: ${n2}." and plan.warnings == []


def test_a_placeholder_followed_by_han_text_names_the_node() -> None:
    plan = parse_plan(_plan(*CHAIN, {"answer": "首都是$n1，天气$n2的情况"}), TOOLS)
    assert plan.answer == "首都是${n1}，天气${n2}的情况"


def test_a_plan_without_a_template_has_none() -> None:
    assert parse_plan(_plan(*CHAIN), TOOLS).answer is None


def test_a_template_naming_a_node_the_plan_does_not_have_is_dropped_with_a_warning() -> None:
    plan = parse_plan(_plan(*CHAIN, {"answer": "Weather: $n3"}), TOOLS)
    assert plan.answer is None and [n.id for n in plan.nodes] == ["n1", "n2"]
    assert any("$n3 names no step of the plan" in w for w in plan.warnings)


def test_a_template_naming_no_result_is_dropped() -> None:
    plan = parse_plan(_plan(*CHAIN, {"answer": "It is sunny."}), TOOLS)
    assert plan.answer is None and any("names no step's result" in w for w in plan.warnings)


def test_a_template_is_dropped_when_reading_the_plan_dropped_a_step() -> None:
    unknown = {"id": "n3", "tool": "no_such_tool", "params": {}}
    plan = parse_plan(_plan(*CHAIN, unknown, {"answer": "$n1: $n2"}), TOOLS)
    assert [n.id for n in plan.nodes] == ["n1", "n2"] and plan.answer is None
    assert any("its steps were changed" in w for w in plan.warnings)


def test_a_template_alone_is_a_plan_of_no_step() -> None:
    plan = parse_plan(_plan({"answer": "Hello there."}), TOOLS)
    assert plan.nodes == [] and plan.answer is None


def test_a_wrapped_plan_may_carry_the_template_beside_its_nodes() -> None:
    plan = parse_plan(json.dumps({"plan": CHAIN, "answer": "Weather in $n1: $n2"}), TOOLS)
    assert plan.answer == "Weather in ${n1}: ${n2}"


def test_the_structured_output_schema_offers_the_template_beside_the_plan() -> None:
    from saber.planner import plan_json_schema

    schema = plan_json_schema(TOOLS)
    assert schema["properties"]["answer"]["type"] == "string" and schema["required"] == ["plan"]


def test_a_cut_plan_keeps_no_template() -> None:
    text = _plan(*CHAIN, {"id": "n3", "tool": "get_time", "params": {"timezone": "Asia/Tokyo"}},
                 {"answer": "$n1 $n2 $n3"})
    cut = text[: text.index('"timezone"')]
    plan = parse_plan(cut, TOOLS)
    assert [n.id for n in plan.nodes] == ["n1", "n2"] and plan.answer is None


def test_streaming_yields_every_node_before_the_template_arrives_and_the_final_plan_has_it() -> None:
    text = _plan(*CHAIN, {"answer": "Weather in $n1: $n2"})
    parser = IncrementalPlanParser(TOOLS)
    start = text.index('{"answer"')
    yielded = [n.id for n in parser.feed(text[:start])]
    assert yielded == ["n1", "n2"]  # the last node started as soon as its brace closed
    assert parser.feed(text[start:]) == []
    final = parser.finish()
    assert final.plan is not None and final.plan.answer == "Weather in ${n1}: ${n2}"
    assert final.late == [] and final.changed == {} and final.dropped == []


def test_filling_puts_each_result_in_its_place_or_refuses_when_one_is_missing() -> None:
    assert fill_template("Capital ${n1}; weather ${n2}.", {"n1": "Tokyo", "n2": "sunny"}) == [
        "Capital ", "Tokyo", "; weather ", "sunny", "."]
    assert fill_template("Capital ${n1}; weather ${n2}.", {"n1": "Tokyo"}) is None
    assert fill_template("${n1}", {"n1": "Tokyo"}) == ["Tokyo"]


def test_the_prompt_offers_the_template_and_says_a_placeholder_is_the_dependency() -> None:
    for query in ("weather in the capital of Japan", "日本首都的天气"):
        system = build_planner_prompt(query, TOOLS)[0].content
        assert '{"answer":"…' in system and "$n1" in system and "depends_on" in system
