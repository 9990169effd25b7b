"""A bare ``$<digits>`` is LLMCompiler's reference to an earlier step only inside a numbered plan.

Everywhere else it is a dollar amount ("under $2", "$1 pizza") and must reach the tool as the
user or the model wrote it: no dependency, no substitution at run time.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from saber.graph import GraphRuntime
from saber.planner import parse_plan, rule_plan, substitute_placeholders
from saber.tools import Tool


def _noop(args: dict[str, Any]) -> Any:
    raise AssertionError("not executed in planning")


Q = {"properties": {"query": {"type": "string"}}, "required": ["query"]}
TOOLS = {
    "search_web": Tool.from_json_schema("search_web", "Search the web", Q, _noop),
    "rag_search": Tool.from_json_schema("rag_search", "Knowledge base", Q, _noop),
    "get_time": Tool.from_json_schema("get_time", "Time", {"properties": {"timezone": {"type": "string"}}}, _noop),
    "calculator": Tool.from_json_schema("calculator", "Calc", {"properties": {"expression": {"type": "string"}},
                                                                "required": ["expression"]}, _noop),
}
AGENTS = {"research_agent": "r", "writer_agent": "w"}


def _plan(*nodes: dict[str, Any]) -> str:
    return json.dumps(list(nodes))


def test_a_dollar_amount_in_a_json_plan_is_not_a_placeholder() -> None:
    text = _plan(
        {"id": "n1", "tool": "search_web", "params": {"query": "best coffee beans under $2 per cup"}, "depends_on": []},
        {"id": "n2", "tool": "get_time", "params": {}, "depends_on": []},
    )
    parsed = parse_plan(text, TOOLS)
    n1 = parsed.nodes[0]
    assert n1.params == {"query": "best coffee beans under $2 per cup"}
    assert n1.depends_on == []


@pytest.mark.parametrize("amount", ["$1", "${1}", "{{1}}"])
def test_numbered_forms_outside_llmcompiler_are_left_alone(amount: str) -> None:
    text = _plan(
        {"id": 1, "tool": "get_time", "params": {}},
        {"id": 2, "tool": "search_web", "params": {"query": f"{amount} pizza deals"}},
    )
    n2 = parse_plan(text, TOOLS).nodes[1]
    assert (n2.id, n2.params, n2.depends_on) == ("n2", {"query": f"{amount} pizza deals"}, [])


@pytest.mark.parametrize(("written", "canonical"), [("$n1", "${n1}"), ("${n1}", "${n1}"), ("{{n1}}", "${n1}"),
                                                    ("${n1.city}", "${n1.city}"), ("{{ n1.city }}", "${n1.city}")])
def test_named_placeholders_still_become_dependencies(written: str, canonical: str) -> None:
    text = _plan(
        {"id": "n1", "tool": "get_time", "params": {}},
        {"id": "n2", "tool": "search_web", "params": {"query": f"events near {written} under $1"}},
    )
    n2 = parse_plan(text, TOOLS).nodes[1]
    assert n2.params == {"query": f"events near {canonical} under $1"}
    assert n2.depends_on == ["n1"]


def test_llmcompiler_references_still_name_earlier_steps() -> None:
    text = '1. search_web("gold price per ounce")\n2. calculator("$1 / 31.1")\n3. join()<END_OF_PLAN>'
    parsed = parse_plan(text, TOOLS)
    assert parsed.format == "llmcompiler"
    assert [(n.id, n.params, n.depends_on) for n in parsed.nodes] == [
        ("n1", {"query": "gold price per ounce"}, []),
        ("n2", {"expression": "${n1} / 31.1"}, ["n1"]),
    ]


def test_llmcompiler_dollar_amounts_naming_no_earlier_step_are_kept() -> None:
    # $2 would be the step after this one, $1000 no step at all: both are prices
    text = '1. search_web("pizza under $2 or sets under $1000")\n2. get_time()\n3. join()'
    parsed = parse_plan(text, TOOLS)
    assert [(n.id, n.params, n.depends_on) for n in parsed.nodes] == [
        ("n1", {"query": "pizza under $2 or sets under $1000"}, []),
        ("n2", {}, []),
    ]


@pytest.mark.parametrize(("query", "terms"), [
    ("search the web for $1 pizza deals", "$1 pizza deals"),
    ("搜索一下 $1 披萨优惠，顺便看看北京天气和时间", "$1 披萨优惠"),
    ("search the web for ${n1} and {{n2}} and $n1", "${n1} and {{n2}} and $n1"),
])
def test_the_rule_planner_never_turns_the_query_into_placeholders(query: str, terms: str) -> None:
    plan = rule_plan(query, TOOLS, city_from_query=lambda q: None)
    searches = {n.tool: n for n in plan.nodes if n.tool in ("search_web", "rag_search")}
    assert searches["rag_search"].params == {"query": query}
    assert searches["search_web"].params == {"query": terms}
    assert all(node.depends_on == [] for node in searches.values())
    GraphRuntime(plan.nodes, TOOLS)  # the race group is accepted


def test_the_rule_pipeline_keeps_goals_verbatim_and_only_its_own_edges() -> None:
    query = "调研 $1 以下的咖啡机，参考 $n1，写成报告"
    plan = rule_plan(query, TOOLS, agents=AGENTS)
    assert [(n.agent, n.goal, n.depends_on) for n in plan.nodes] == [
        ("research_agent", query, []),
        ("writer_agent", query, ["n1"]),
    ]


def test_substitution_leaves_dollar_amounts_alone() -> None:
    results = {"n1": "RESULT1", "n2": "RESULT2"}
    params = {"a": "under $2 per cup", "b": "$1 pizza", "c": ["${1}", "{{2}}"], "d": "${n2} under $1"}
    assert substitute_placeholders(params, results) == {
        "a": "under $2 per cup", "b": "$1 pizza", "c": ["${1}", "{{2}}"], "d": "RESULT2 under $1"}
