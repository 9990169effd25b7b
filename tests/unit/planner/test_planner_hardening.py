"""Issue 9, item 8: the numbered-plan parser reads each line once, a plan is capped at max_nodes
with a warning, and any failure to read the text is a PlanParseError (so the rule planner takes over)."""

from __future__ import annotations

from typing import Any

import pytest

import saber.planner.llmcompiler as llmcompiler
from saber.planner import PlanParseError, parse_plan
from saber.tools import Tool


def echo(args: dict[str, Any]) -> dict[str, Any]:
    return args


TOOLS = {"search": Tool.from_json_schema("search", "", {"type": "object", "properties": {"q": {"type": "string"}}}, echo)}


@pytest.mark.parametrize("text", ["[" * 100_000, '{"a":' * 50_000])
def test_deep_nesting_is_a_plan_parse_error(text: str) -> None:
    with pytest.raises(PlanParseError, match="nested too deeply"):
        parse_plan(text, TOOLS)


def test_deeply_nested_call_arguments_are_reported_not_raised() -> None:
    try:
        plan = parse_plan("1. search(" + "[" * 50_000 + ")", TOOLS)
    except PlanParseError:
        return
    assert all(n.tool == "search" for n in plan.nodes)


def test_a_long_numbered_plan_is_capped_and_read_only_up_to_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    original = llmcompiler._call_args

    def counted(arg_text: str) -> Any:
        calls.append(arg_text)
        return original(arg_text)

    monkeypatch.setattr(llmcompiler, "_call_args", counted)
    text = "\n".join(f'{i}. search("q{i} ${i - 1}")' for i in range(1, 10_001))
    plan = parse_plan(text, TOOLS, max_nodes=50)
    assert len(plan.nodes) == 50 and len(calls) == 50
    assert any("more than 50 steps" in w and "planner.max_nodes" in w for w in plan.warnings)
    assert plan.nodes[-1].depends_on == ["n49"]


def test_a_long_json_plan_is_capped_with_a_warning() -> None:
    text = "[" + ",".join(f'{{"id": "n{i}", "tool": "search", "params": {{"q": "x"}}}}' for i in range(1, 201)) + "]"
    plan = parse_plan(text, TOOLS, max_nodes=10)
    assert [n.id for n in plan.nodes] == [f"n{i}" for i in range(1, 11)]
    assert any("200 nodes, over the limit of 10" in w for w in plan.warnings)


def test_earlier_steps_are_found_without_rescanning(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "1. search(\"a\")\n3. search(\"b $1\")\n2. search(\"c $3\")"
    plan = parse_plan(text, TOOLS)
    deps = {n.id: n.depends_on for n in plan.nodes}
    assert deps["n3"] == ["n1"] and deps["n2"] == [], "$3 in step 2 names no earlier step: it stays text"
