"""Pythonic tool calls: parsed with ast, never run; names resolved against the registry."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from saber.planner import PlanParseError, parse_plan
from saber.planner.names import resolve_name
from saber.planner.pythonic import parse_pythonic
from saber.tools import Tool


def _tool(name: str, props: dict[str, Any], required: list[str] | None = None) -> Tool:
    def never(args: dict[str, Any]) -> Any:
        raise AssertionError("not run")

    return Tool.from_json_schema(name, name, {"type": "object", "properties": props, "required": required or []}, never)


TOOLS = {
    "get_weather": _tool("get_weather", {"city": {"type": "string"}, "days": {"type": "integer"}}, ["city"]),
    "search_web": _tool("search_web", {"query": {"type": "string"}}, ["query"]),
    "functions.lookup": _tool("functions.lookup", {"key": {"type": "string"}}, ["key"]),
    "write_document": _tool("write_document", {"title": {"type": "string"}, "content": {"type": "string"}}, ["title", "content"]),
}
AGENTS = {"writer_agent": "writes reports"}


def _plan(text: str) -> list[dict[str, Any]]:
    parsed = parse_plan(text, TOOLS, agents=AGENTS)
    return [{"id": n.id, "tool": n.tool or n.agent, "params": n.params, "depends_on": list(n.depends_on), "goal": n.goal}
            for n in parsed.nodes]


def test_code_in_arguments_is_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    for text in (f"[get_weather(city=__import__('os').system('touch {marker}'))]",
                 f"get_weather(city=open('{marker}', 'w').write('x'))",
                 f"x = __import__('os').system('touch {marker}')\nget_weather(city=x)"):
        with pytest.raises(PlanParseError) as info:
            parse_plan(text, TOOLS, agents=AGENTS)
        assert any("not a literal" in w or "rejected" in w for w in info.value.warnings), info.value.warnings
    assert not marker.exists()


def test_rejection_names_the_argument() -> None:
    found = parse_pythonic("[get_weather(city='a' + 'b')]", TOOLS, AGENTS)
    assert found is not None and found.raw == []
    assert found.warnings == ("rejected a pythonic call: get_weather: \"'a' + 'b'\" is not a literal",)


def test_positional_arguments_follow_the_schema_order() -> None:
    assert _plan("get_weather('Oslo', 3)") == [
        {"id": "n1", "tool": "get_weather", "params": {"city": "Oslo", "days": 3}, "depends_on": [], "goal": ""}]
    with pytest.raises(PlanParseError) as info:
        parse_plan("get_weather('Oslo', city='Bergen')", TOOLS, agents=AGENTS)
    assert "got two values for 'city'" in " ".join(info.value.warnings)


def test_variables_become_dependencies_with_placeholders() -> None:
    nodes = _plan("r = search_web(query='x')\nwrite_document(title=f'about {r.title}', content=r['items'][0])")
    assert nodes[1]["params"] == {"title": "about ${n1.title}", "content": "${n1.items.0}"}
    assert nodes[1]["depends_on"] == ["n1"]


def test_a_call_using_a_rejected_call_is_rejected_too() -> None:
    found = parse_pythonic("r = search_web(query=1 + 1)\nwrite_document(title='t', content=r)", TOOLS, AGENTS)
    assert found is not None and found.raw == []
    assert "uses r, whose call was rejected" in found.warnings[1]


def test_literal_dollar_text_is_not_a_reference() -> None:
    nodes = _plan("r = search_web(query='x')\nwrite_document(title='${r} costs $5', content=r)")
    assert nodes[1]["params"]["title"] == "${r} costs $5"
    assert nodes[1]["params"]["content"] == "${n1}"


def test_nul_in_a_string_is_rejected() -> None:
    found = parse_pythonic("[search_web(query='a\\x00b')]", TOOLS, AGENTS)
    assert found is not None and found.raw == [] and "NUL" in found.warnings[0]


def test_functions_prefix_is_stripped_only_when_the_full_name_is_unknown() -> None:
    assert resolve_name("functions.get_weather", TOOLS) == "get_weather"
    assert resolve_name("functions.lookup", TOOLS) == "functions.lookup"
    assert resolve_name("functions.nothing", TOOLS) == "functions.nothing"
    # the JSON shapes go through the same rule (validation)
    assert _plan('[{"name": "functions.lookup", "arguments": {"key": "k"}}]')[0]["tool"] == "functions.lookup"
    assert _plan('[{"name": "functions.search_web", "arguments": {"query": "q"}}]')[0]["tool"] == "search_web"


def test_sub_agent_goal_from_the_first_positional_argument() -> None:
    assert _plan("[writer_agent('write it up')]")[0] == {
        "id": "n1", "tool": "writer_agent", "params": {}, "depends_on": [], "goal": "write it up"}


def test_prose_that_only_mentions_code_is_no_plan() -> None:
    with pytest.raises(PlanParseError):
        parse_plan("You could call print(result) or len(items) yourself.", TOOLS, agents=AGENTS)


@pytest.mark.parametrize("text", [
    "[" * 500 + "get_weather(city='x')" + "]" * 500,
    "get_weather(city=" + "[" * 500 + "]" * 500 + ")",
    "x" * 1_000_000,
    "get_weather(city='Paris')\n" * 20_000,
    "Sure.\n" + "get_weather(city=\n" * 2000,
])
def test_hostile_input_ends_quickly_with_an_answer_or_a_clear_error(text: str) -> None:
    start = time.monotonic()
    try:
        parse_plan(text, TOOLS, agents=AGENTS)
    except PlanParseError as exc:
        assert str(exc)
    assert time.monotonic() - start < 60  # a hang guard, not a speed test


def test_a_cut_off_list_keeps_its_complete_calls() -> None:
    parsed = parse_plan("[get_weather(city='a, b'), search_web(query='it\\'s'), get_weather(city='Li", TOOLS, agents=AGENTS)
    assert [(n.tool, n.params) for n in parsed.nodes] == [("get_weather", {"city": "a, b"}), ("search_web", {"query": "it's"})]
    assert "the pythonic call list was cut off; kept its complete calls" in parsed.warnings


def test_a_repeated_keyword_is_rejected_and_the_error_says_why() -> None:
    with pytest.raises(PlanParseError, match="no usable call: get_weather: got two values for 'city'"):
        parse_plan("get_weather(city='Paris', city='Lyon')", TOOLS, agents=AGENTS)
