"""Copied example values and ignored entities in a model's plan (shaped like SmolLM2-135M's plans)."""

from __future__ import annotations

import json

import pytest

from saber.graph.node import Node
from saber.planner import PlanParseError, parse_plan
from saber.planner.grounding import COPIED, GroundingContext, ground_call, ground_nodes, grounding
from saber.tools import tool


@tool
def get_weather(city: str) -> str:
    """Weather of a city."""
    return city


@tool
def get_time(city: str = "UTC") -> str:
    """Time in a city."""
    return city


@tool
def search_web(query: str) -> str:
    """Search the web."""
    return query


TOOLS = {t.name: t for t in (get_weather, get_time, search_web)}


def plan(*nodes: dict[str, object]) -> str:
    return json.dumps([{"type": "tool", "depends_on": [], "race_group": None, **n} for n in nodes])


def test_the_prompt_examples_city_is_replaced_by_the_rules_city() -> None:
    with grounding(GroundingContext(query="What's the weather in Paris?", tools=TOOLS)):
        parsed = parse_plan(plan({"id": "n1", "tool": "get_weather", "params": {"city": "Shanghai"}}), TOOLS)
    assert [n.params for n in parsed.nodes] == [{"city": "Paris"}]
    assert any(COPIED in w and "'Shanghai'" in w and "'Paris'" in w for w in parsed.warnings)


def test_without_a_rule_value_the_copied_node_is_dropped_with_its_dependents() -> None:
    raw = plan({"id": "n1", "tool": "search_web", "params": {"query": "K8s service types"}},
               {"id": "n2", "tool": "get_weather", "params": {"city": "$n1"}, "depends_on": ["n1"]})
    parsed = parse_plan(raw, TOOLS)
    with grounding(GroundingContext(query="tell me a joke about cats", tools={"get_weather": get_weather, "search_web": search_web})):
        nodes, warnings, dropped = ground_nodes(parsed.nodes)
        with pytest.raises(PlanParseError, match=COPIED):  # nothing left: the caller falls back to the rules
            parse_plan(raw, TOOLS)
    assert nodes == [] and set(dropped) == {"n1", "n2"}
    assert any("n1 dropped" in w and COPIED in w for w in warnings)


def test_a_value_the_user_gave_is_not_a_copy_even_if_the_example_has_it() -> None:
    for context in (GroundingContext(query="上海天气怎么样", tools=TOOLS),
                    GroundingContext(query="and the weather?", tools=TOOLS, conversation=["I live in Shanghai"]),
                    GroundingContext(query="weather please", tools=TOOLS, preferences={"city": "Shanghai"})):
        with grounding(context):
            parsed = parse_plan(plan({"id": "n1", "tool": "get_weather", "params": {"city": "Shanghai"}}), TOOLS)
        assert [n.params for n in parsed.nodes] == [{"city": "Shanghai"}], context
        assert not any(COPIED in w for w in parsed.warnings)


def test_a_value_from_an_upstream_result_is_not_a_copy() -> None:
    upstream = Node(id="n1", tool="search_web", params={"query": "where is the conference"}, result="It is in Shanghai.")
    fresh = Node(id="n2", tool="get_weather", params={"city": "Shanghai"}, depends_on=["n1"])
    with grounding(GroundingContext(query="weather at the conference venue", tools=TOOLS)):
        nodes, warnings, _ = ground_nodes([fresh], existing={"n1": upstream}, new_plan=False)
    assert nodes == [fresh] and warnings == []


def test_an_entity_the_plan_ignores_gets_the_rule_node() -> None:
    with grounding(GroundingContext(query="What time is it in Tokyo?", tools=TOOLS)):
        parsed = parse_plan(plan({"id": "n1", "tool": "search_web", "params": {"query": "current time"}}), TOOLS)
        mentioned = parse_plan(plan({"id": "n1", "tool": "search_web", "params": {"query": "time in Tokyo"}}), TOOLS)
    assert [(n.id, n.tool, n.params) for n in parsed.nodes] == [("n1", "search_web", {"query": "current time"}),
                                                               ("n2", "get_time", {"city": "Tokyo"})]
    assert [n.tool for n in mentioned.nodes] == ["search_web"]
    assert any("n2 get_time('Tokyo') added" in w for w in parsed.warnings)


def test_an_entity_the_plan_covers_is_not_added_again() -> None:
    with grounding(GroundingContext(query="现在几点，北京天气怎么样", tools=TOOLS)):
        parsed = parse_plan(plan({"id": "n1", "tool": "get_time", "params": {"city": "Asia/Shanghai"}},
                                 {"id": "n2", "tool": "get_weather", "params": {"city": "北京"}}), TOOLS)
    assert [n.tool for n in parsed.nodes] == ["get_time", "get_weather"]


@tool
def lookup_capital(country: str) -> str:
    """The capital city of a country."""
    return country


CHAINED = {t.name: t for t in (get_weather, get_time, search_web, lookup_capital)}


@pytest.mark.parametrize(("query", "tool_name"), [
    ("加拿大首都的天气怎么样", "get_weather"),
    ("巴西的首都现在几点", "get_time"),
    ("What is the weather in the capital of Canada?", "get_weather"),
])
def test_a_place_the_plan_finds_from_a_result_gets_no_rule_node(query: str, tool_name: str) -> None:
    """The right plan looks the capital up first; the rules' reading of the query ("加拿大首") is not
    a place, and the plan's placeholder already reaches that argument."""
    right = plan({"id": "n1", "tool": "lookup_capital", "params": {"country": "Canada"}},
                 {"id": "n2", "tool": tool_name, "params": {"city": "${n1}"}, "depends_on": ["n1"]})
    with grounding(GroundingContext(query=query, tools=CHAINED)):
        parsed = parse_plan(right, CHAINED)
    assert [(n.tool, n.params) for n in parsed.nodes] == [("lookup_capital", {"country": "Canada"}),
                                                          (tool_name, {"city": "${n1}"})]
    assert not any("added" in w for w in parsed.warnings), parsed.warnings


def test_a_phrase_that_is_not_a_place_gets_no_rule_node() -> None:
    cities = ["武汉", "西安", "重庆", "成都", "杭州", "南京"]
    right = plan(*({"id": f"n{i}", "tool": "get_weather", "params": {"city": c}} for i, c in enumerate(cities, 1)))
    with grounding(GroundingContext(query="查一下这六个城市的天气：武汉、西安、重庆、成都、杭州、南京", tools=TOOLS)):
        parsed = parse_plan(right, TOOLS)
    assert [n.params["city"] for n in parsed.nodes] == cities
    assert not any("added" in w for w in parsed.warnings), parsed.warnings


def test_nothing_changes_outside_a_grounding_context() -> None:
    parsed = parse_plan(plan({"id": "n1", "tool": "get_weather", "params": {"city": "Shanghai"}}), TOOLS)
    assert [n.params for n in parsed.nodes] == [{"city": "Shanghai"}]


def test_a_model_chosen_tool_call_is_checked_the_same_way() -> None:
    context = GroundingContext(query="weather in Paris today", tools=TOOLS)
    fixed, warnings = ground_call(Node(id="n1", tool="get_weather", params={"city": "Shanghai"}), context)
    assert fixed is not None and fixed.params == {"city": "Paris"} and warnings
    gone, warnings = ground_call(Node(id="n1", tool="search_web", params={"query": "K8s service types"}),
                                 GroundingContext(query="hello", tools={"search_web": search_web}))
    assert gone is None and COPIED in warnings[0]


@tool(name="get_time")
def zone_time(timezone: str = "UTC") -> str:
    """Time in a time zone."""
    return timezone


ZONE_TOOLS = {**TOOLS, "get_time": zone_time}


@pytest.mark.parametrize(("query", "tool_name", "key", "chosen", "expected"), [
    ("What time is it in New York?", "get_time", "timezone", "Asia/Tokyo", "New York"),
    ("纽约现在几点", "get_time", "timezone", "Tokyo", "纽约"),
    ("weather in Paris today", "get_weather", "city", "Berlin", "Paris"),
])
def test_a_model_chosen_place_the_query_does_not_name_is_replaced(query: str, tool_name: str, key: str, chosen: str,
                                                                  expected: str) -> None:
    fixed, warnings = ground_call(Node(id="n1", tool=tool_name, params={key: chosen}),
                                  GroundingContext(query=query, tools=ZONE_TOOLS, example_text="[]"))
    assert fixed is not None and fixed.params == {key: expected}
    assert len(warnings) == 1 and "a place the request does not name" in warnings[0] and repr(chosen) in warnings[0]


@pytest.mark.parametrize(("query", "key", "chosen"), [
    ("What time is it in New York?", "timezone", "America/New_York"),
    ("What time is it in New York?", "timezone", "纽约"),
    ("纽约现在几点", "timezone", "America/New_York"),
    ("what time is it in the capital of Japan?", "timezone", "Asia/Tokyo"),  # no place named: the model may infer
    ("What time is it in New York?", "timezone", "Gotham"),  # not a known place: the tool says so
])
def test_the_same_place_in_another_form_or_an_inferred_one_is_kept(query: str, key: str, chosen: str) -> None:
    node = Node(id="n1", tool="get_time", params={key: chosen})
    fixed, warnings = ground_call(node, GroundingContext(query=query, tools=ZONE_TOOLS, example_text="[]"))
    assert fixed == node and warnings == []


def test_a_plan_may_add_places_the_query_does_not_name() -> None:
    context = GroundingContext(query="weather in Paris and the city of the 2028 Olympics", tools=TOOLS, example_text="[]")
    with grounding(context):
        parsed = parse_plan(plan({"id": "n1", "tool": "get_weather", "params": {"city": "Paris"}},
                                 {"id": "n2", "tool": "get_weather", "params": {"city": "Los Angeles"}}), TOOLS)
    assert [n.params["city"] for n in parsed.nodes] == ["Paris", "Los Angeles"] and not parsed.warnings
