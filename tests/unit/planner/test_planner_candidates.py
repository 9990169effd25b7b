"""Every plan-shaped value in a planner's output is a candidate: one that validation empties
(an unavailable tool mentioned first, an echo of the node format) does not hide the real plan."""

from __future__ import annotations

from typing import Any

import pytest

from saber.planner import PlanParseError, parse_plan
from saber.tools import Tool


def _noop(args: dict[str, Any]) -> Any:
    raise AssertionError


Q = {"properties": {"query": {"type": "string"}}, "required": ["query"]}
TOOLS = {
    "search_web": Tool.from_json_schema("search_web", "s", Q, _noop),
    "get_time": Tool.from_json_schema("get_time", "t", {"properties": {"timezone": {"type": "string"}}}, _noop),
}


def _summary(text: str) -> list[tuple[str, str, dict[str, Any]]]:
    return [(n.id, n.target, n.params) for n in parse_plan(text, TOOLS).nodes]


def test_an_unavailable_tool_mentioned_first_does_not_hide_the_plan() -> None:
    text = ('A {"tool": "calculator", "params": {"expr": "2+2"}} call is not possible here, so the plan is:\n'
            '[{"id": "n1", "type": "tool", "tool": "get_time", "params": {"timezone": "UTC"}, "depends_on": []}]')
    parsed = parse_plan(text, TOOLS)
    assert [(n.id, n.target, n.params) for n in parsed.nodes] == [("n1", "get_time", {"timezone": "UTC"})]
    assert any("skipped" in w and "calculator" in w for w in parsed.warnings), parsed.warnings


def test_an_echo_of_the_node_format_does_not_hide_the_plan() -> None:
    text = ('Each node looks like {"id": "n1", "tool": "<name>", "params": {}}.\n'
            '[{"id": "n1", "tool": "search_web", "params": {"query": "rust async"}}]')
    parsed = parse_plan(text, TOOLS)
    assert [(n.id, n.target, n.params) for n in parsed.nodes] == [("n1", "search_web", {"query": "rust async"})]
    assert any("skipped" in w and "<name>" in w for w in parsed.warnings), parsed.warnings


def test_a_fenced_plan_that_validates_to_nothing_gives_way_to_a_later_one() -> None:
    text = ('```json\n[{"id": "n1", "tool": "web.run", "params": {"q": "x"}}]\n```\n'
            'That tool is not listed; instead:\n```json\n[{"id": "n1", "tool": "search_web", "params": {"query": "x"}}]\n```')
    assert _summary(text) == [("n1", "search_web", {"query": "x"})]


def test_the_first_usable_candidate_wins() -> None:
    text = ('[{"id": "n1", "tool": "get_time", "params": {}}]\n'
            'or maybe [{"id": "n1", "tool": "search_web", "params": {"query": "x"}}]')
    assert _summary(text) == [("n1", "get_time", {})]


def test_a_text_dialect_call_to_an_unknown_tool_gives_way_to_json() -> None:
    text = ('<tool_call>\n{"name": "calculator", "arguments": {"expr": "1+1"}}\n</tool_call>\n'
            '[{"id": "n1", "tool": "get_time", "params": {}}]')
    assert _summary(text) == [("n1", "get_time", {})]


def test_an_explicit_empty_plan_still_means_no_tool_is_needed() -> None:
    assert parse_plan("[]", TOOLS).nodes == []
    assert parse_plan("No tool is needed for a greeting.\n```json\n[]\n```", TOOLS).nodes == []


def test_an_empty_plan_after_an_unusable_candidate_is_the_answer() -> None:
    parsed = parse_plan('I would call {"tool": "calculator", "params": {}} but it is not listed, so: []', TOOLS)
    assert parsed.nodes == []
    assert any("skipped" in w and "calculator" in w for w in parsed.warnings)


def test_a_non_empty_plan_still_beats_an_earlier_empty_one() -> None:
    assert _summary('[] -- actually: [{"id": "n1", "tool": "get_time", "params": {}}]') == [("n1", "get_time", {})]


def test_when_no_candidate_survives_the_error_names_every_reason() -> None:
    text = '{"tool": "calculator", "params": {}} then [{"id": "n1", "tool": "translate", "params": {}}]'
    with pytest.raises(PlanParseError, match="calculator") as info:
        parse_plan(text, TOOLS)
    assert any("translate" in w for w in info.value.warnings), info.value.warnings
