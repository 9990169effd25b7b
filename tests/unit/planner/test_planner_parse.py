from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from saber.graph import TaskGraph
from saber.planner import PlanParseError, parse_plan, substitute_placeholders
from saber.tools import Tool


def _noop(args: dict[str, Any]) -> Any:
    raise AssertionError


Q = {"properties": {"query": {"type": "string"}}, "required": ["query"]}
TOOLS = {
    "search_web": Tool.from_json_schema("search_web", "Search", Q, _noop),
    "get_weather": Tool.from_json_schema("get_weather", "W", {"properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}, _noop),
}


def test_non_text_input_is_a_parse_error() -> None:
    with pytest.raises(PlanParseError, match="must be text"):
        parse_plan(None, TOOLS)  # type: ignore[arg-type]


def test_all_nodes_invalid_is_an_error_that_carries_the_reasons() -> None:
    with pytest.raises(PlanParseError) as info:
        parse_plan('[{"id":"n1","tool":"get_weather","params":{}}]', TOOLS)
    assert any("city: field required" in w for w in info.value.warnings)


def test_sub_agents_need_to_be_allowed() -> None:
    text = '[{"id":"n1","type":"sub_agent","agent":"research_agent","goal":"x"},{"id":"n2","tool":"search_web","params":{"query":"x"}}]'
    assert [n.id for n in parse_plan(text, TOOLS).nodes] == ["n2"]
    assert [n.id for n in parse_plan(text, TOOLS, agents={"research_agent": "r"}).nodes] == ["n1", "n2"]


def test_parsed_plans_build_valid_graphs_and_substitute_at_run_time() -> None:
    text = ('[{"id":"n1","tool":"search_web","params":{"query":"where"},"depends_on":["n2"]},'
            '{"id":"n2","tool":"get_weather","params":{"city":"$n1","days":"2"},"depends_on":["n1"]}]')
    parsed = parse_plan(text, TOOLS)
    graph = TaskGraph(parsed.nodes)  # validates: no cycle is left
    assert graph.levels() == [["n1"], ["n2"]]
    n2 = graph["n2"]
    args = TOOLS["get_weather"].validate(substitute_placeholders(n2.params, {"n1": "Lyon"}))
    assert args == {"city": "Lyon", "days": 2}


def test_placeholder_field_with_a_bad_sibling_still_drops_the_node() -> None:
    text = '[{"id":"n1","tool":"search_web","params":{"query":"x"}},{"id":"n2","tool":"get_weather","params":{"city":"$n1","days":"many"}}]'
    parsed = parse_plan(text, TOOLS)
    assert [n.id for n in parsed.nodes] == ["n1"]
    assert any("n2 dropped" in w and "days" in w for w in parsed.warnings)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('[]{}",:\'ntool$ 天气n1<>|_/`\\')) | st.characters(), max_size=200))
def test_junk_never_raises_anything_but_plan_parse_error(text: str) -> None:
    try:
        parsed = parse_plan(text, TOOLS)
    except PlanParseError:
        return
    TaskGraph(parsed.nodes)  # whatever came out is a valid graph
