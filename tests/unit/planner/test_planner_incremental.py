"""IncrementalPlanParser: nodes yielded while the plan streams are the nodes of the whole plan."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from saber.planner import PlanParseError, parse_plan
from saber.planner.incremental import IncrementalPlanParser

_LOADER_PATH = Path(__file__).parents[2] / "fixtures" / "planner" / "corpus_loader.py"
_spec = importlib.util.spec_from_file_location("planner_corpus_loader", _LOADER_PATH)
assert _spec is not None and _spec.loader is not None
corpus = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("planner_corpus_loader", corpus)
_spec.loader.exec_module(corpus)

TOOLS, AGENTS = corpus.load_tools()
CASES = corpus.load_cases()


def words(text: str) -> list[str]:
    return re.findall(r"\S+\s*|\s+", text)


def stream(text: str, pieces: list[str] | None = None) -> tuple[list[list[str]], Any]:
    parser = IncrementalPlanParser(TOOLS, agents=AGENTS)
    batches = [[n.id for n in parser.feed(p)] for p in (pieces or words(text))]
    return batches, parser


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_corpus_plan_streamed_word_by_word_yields_the_nodes_parsed_whole(case: Any) -> None:
    parser = IncrementalPlanParser(TOOLS, agents=AGENTS)
    early = [n for w in words(case.output) for n in parser.feed(w)]
    final = parser.finish()
    try:
        whole = parse_plan(case.output, TOOLS, agents=AGENTS).nodes
    except PlanParseError:
        whole = []
        assert final.plan is None and final.error is not None
    assert not final.changed and not final.dropped
    streamed = {n.id: n.to_dict() for n in [*early, *final.late]}
    assert streamed == {n.id: n.to_dict() for n in whole}
    assert len(early) + len(final.late) == len(whole)  # each node once


def test_a_json_node_is_yielded_the_moment_its_closing_brace_arrives() -> None:
    plan = json.dumps([{"id": f"n{i}", "tool": "get_weather", "params": {"city": city}}
                       for i, city in enumerate(["Paris", "London", "Berlin"], 1)])
    parser = IncrementalPlanParser(TOOLS, agents=AGENTS)
    at = {n.id: i for i, ch in enumerate(plan) for n in parser.feed(ch)}  # character by character
    ends = [m.end() - 1 for m in re.finditer(r'"}}', plan)]
    assert at == {"n1": ends[0], "n2": ends[1], "n3": ends[2]}  # not when the next node begins, nor at "]"
    final = parser.finish()
    assert final.late == [] and not final.changed and final.plan is not None and final.plan.format == "ideal"


@pytest.mark.parametrize("text", [
    '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>\n'
    '<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>',
    "<tool_call><function=get_weather><parameter=city>Paris</parameter></function></tool_call>\n"
    "<tool_call><function=get_weather><parameter=city>Rome</parameter></function></tool_call>",
], ids=["hermes", "qwen-xml"])
def test_a_call_in_tags_is_yielded_when_its_closing_tag_arrives(text: str) -> None:
    parser = IncrementalPlanParser(TOOLS, agents=AGENTS)
    at = {n.params["city"]: i for i, ch in enumerate(text) for n in parser.feed(ch)}
    first_close = {city: re.compile(r"</function>|</tool_call>").search(text, text.index(city)) for city in at}
    assert at == {city: m.end() - 1 for city, m in first_close.items() if m}  # at its own closing tag
    assert set(at) == {"Paris", "Rome"}  # the last one too, before the stream ends
    final = parser.finish()
    assert not final.late and not final.changed and not final.dropped


def test_a_node_whose_closing_cannot_be_told_waits_for_the_next_one() -> None:
    text = "1. get_weather(city='Paris')\n2. get_weather(city='Rome')\n"
    parser = IncrementalPlanParser(TOOLS, agents=AGENTS)
    first = [n.id for n in parser.feed(text[:text.index("2.")])]
    assert first == []  # a numbered line may still grow ("Paris, Texas")
    assert [n.id for n in parser.feed(text[text.index("2."):])] == ["n1"]
    assert [n.id for n in parser.finish().late] == ["n2"]


def test_no_node_is_yielded_from_a_draft_inside_unfinished_reasoning() -> None:
    draft = '<think>maybe [{"id": "n1", "tool": "get_time", "params": {}}] ... no, the weather'
    parser = IncrementalPlanParser(TOOLS, agents=AGENTS)
    assert [n for w in words(draft) for n in parser.feed(w)] == []
    plan = '</think>[{"id": "n1", "tool": "get_weather", "params": {"city": "Berlin"}}]'
    assert [n.params for w in words(plan) for n in parser.feed(w)] == [{"city": "Berlin"}]


def test_a_node_without_an_id_waits_while_a_later_node_may_take_the_one_it_got() -> None:
    plan = '[{"tool": "get_time", "params": {}}, {"id": "n1", "tool": "get_weather", "params": {"city": "Kyiv"}}]'
    parser = IncrementalPlanParser(TOOLS, agents=AGENTS)
    early = [n.id for ch in plan for n in parser.feed(ch)]
    final = parser.finish()
    assert early == ["n1"] and [n.id for n in final.late] == ["n2"] and not final.changed


def test_a_placeholder_naming_a_node_not_yet_written_holds_its_node() -> None:
    plan = json.dumps([{"id": "n1", "tool": "get_weather", "params": {"city": "${n2}"}},
                       {"id": "n2", "tool": "search_web", "params": {"query": "2028 Olympics host city"}}])
    parser = IncrementalPlanParser(TOOLS, agents=AGENTS)
    early = [n for w in words(plan) for n in parser.feed(w)]
    assert [n.id for n in early] == ["n2", "n1"] and early[1].depends_on == ["n2"]
    final = parser.finish()
    assert not final.changed and not final.late


def test_no_node_is_added_for_a_place_the_model_has_not_written_yet() -> None:
    from saber.planner.grounding import GroundingContext, grounding

    plan = json.dumps([{"id": "n1", "tool": "get_weather", "params": {"city": "Paris"}},
                       {"id": "n2", "tool": "get_time", "params": {"timezone": "Asia/Tokyo"}}])
    context = GroundingContext(query="weather in Paris and the time in Tokyo", tools=TOOLS, example_text="")
    with grounding(context):
        parser = IncrementalPlanParser(TOOLS, agents=AGENTS)
        early = [n for w in words(plan) for n in parser.feed(w)]
        final = parser.finish()
    assert [(n.id, n.tool, n.params) for n in early] == [("n1", "get_weather", {"city": "Paris"}),
                                                         ("n2", "get_time", {"timezone": "Asia/Tokyo"})]
    assert final.plan is not None and [n.id for n in final.plan.nodes] == ["n1", "n2"] and not final.late


def test_a_cut_string_is_never_yielded_as_a_complete_argument() -> None:
    plan = '[{"id": "n1", "tool": "search_web", "params": {"query": "Paris museums open on Monday"}}, ' \
           '{"id": "n2", "tool": "get_weather", "params": {"city": "Paris"}}]'
    parser = IncrementalPlanParser(TOOLS, agents=AGENTS)
    seen = [n for ch in plan for n in parser.feed(ch)]  # character by character
    assert [n.params for n in seen] == [{"query": "Paris museums open on Monday"}, {"city": "Paris"}]


def test_a_node_naming_a_later_node_waits_for_it() -> None:
    plan = json.dumps([
        {"id": "n1", "tool": "get_weather", "params": {"city": "Paris"}, "depends_on": ["n3"]},
        {"id": "n2", "tool": "get_weather", "params": {"city": "Rome"}},
        {"id": "n3", "tool": "get_time", "params": {"timezone": "Europe/Paris"}},
        {"id": "n4", "tool": "get_time", "params": {"timezone": "Europe/Rome"}},
    ])
    parser = IncrementalPlanParser(TOOLS, agents=AGENTS)
    order = [n for w in words(plan) for n in parser.feed(w)]
    assert [n.id for n in order] == ["n2", "n3", "n1", "n4"]  # n1 only after n3, and with its dependency
    assert order[2].depends_on == ["n3"]
    assert parser.finish().late == []


def test_a_cycle_is_broken_by_the_final_parse_and_its_nodes_wait_for_it() -> None:
    plan = json.dumps([
        {"id": "n1", "tool": "get_weather", "params": {"city": "Paris"}, "depends_on": ["n2"]},
        {"id": "n2", "tool": "get_time", "params": {"timezone": "Europe/Paris"}, "depends_on": ["n1"]},
        {"id": "n3", "tool": "get_time", "params": {"timezone": "Asia/Tokyo"}},
    ])
    parser = IncrementalPlanParser(TOOLS, agents=AGENTS)
    early = [n for w in words(plan) for n in parser.feed(w)]
    assert not {"n1", "n2"} & {n.id for n in early}
    final = parser.finish()
    assert final.plan is not None and any(w.startswith("cycle") for w in final.plan.warnings)
    assert {n.id for n in [*early, *final.late]} == {"n1", "n2", "n3"}


@pytest.mark.parametrize("text", [
    "1. get_weather(city='Paris')\n2. get_time(timezone='Europe/Paris')\n3. join()\n",
    "[get_weather(city='Paris'), get_time(timezone='Europe/Paris'), get_weather(city='Rome')]",
    '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>\n'
    '<tool_call>{"name": "get_time", "arguments": {"timezone": "Europe/Paris"}}</tool_call>\n'
    '<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>',
    "北京天气：\n```json\n[{\"id\": \"n1\", \"tool\": \"get_weather\", \"params\": {\"city\": \"北京\"}}, "
    "{\"id\": \"n2\", \"tool\": \"get_time\", \"params\": {\"timezone\": \"Asia/Shanghai\"}}]\n```",
], ids=["llmcompiler", "pythonic", "tool-call-tags", "fenced-chinese"])
def test_each_plan_shape_yields_its_first_node_before_the_end(text: str) -> None:
    batches, parser = stream(text)
    first = next(i for i, b in enumerate(batches) if b)
    assert first < len(batches) - 1
    final = parser.finish()
    assert final.plan is not None and not final.changed and not final.dropped


def test_an_unknown_tool_is_never_yielded_and_odd_input_is_refused_clearly() -> None:
    plan = json.dumps([{"id": "n1", "tool": "rm_rf", "params": {}}, {"id": "n2", "tool": "get_weather",
                       "params": {"city": "Paris"}}, {"id": "n3", "tool": "get_time", "params": {}}])
    batches, parser = stream(plan)
    assert "n1" not in [i for b in batches for i in b]
    with pytest.raises(TypeError, match="must be text"):
        parser.feed(b"[]")  # type: ignore[arg-type]  # what a caller with bytes would do
    broken, _ = stream("", ["[", "{", "\"id\"", ": ", "\"n1\""])
    assert broken == [[], [], [], [], []]


def test_a_huge_output_is_parsed_once_at_the_end() -> None:
    junk = "x" * 1_000_000
    plan = junk + "\n" + json.dumps([{"id": "n1", "tool": "get_weather", "params": {"city": "Paris"}},
                                     {"id": "n2", "tool": "get_time", "params": {"timezone": "UTC"}}])
    parser = IncrementalPlanParser(TOOLS, agents=AGENTS)
    early = [n for i in range(0, len(plan), 4096) for n in parser.feed(plan[i:i + 4096])]
    assert early == []
    final = parser.finish()
    assert final.plan is not None and [n.id for n in final.late] == ["n1", "n2"]
