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


def test_a_node_is_yielded_once_the_next_one_is_written_before_the_plan_ends() -> None:
    plan = json.dumps([{"id": f"n{i}", "tool": "get_weather", "params": {"city": city}}
                       for i, city in enumerate(["Paris", "London", "Berlin"], 1)])
    cut = plan.index('{"id": "n3"')
    parser = IncrementalPlanParser(TOOLS, agents=AGENTS)
    early = [n.id for w in words(plan[:cut]) for n in parser.feed(w)]
    assert early == ["n1"]  # n2 may still grow (its last string could be cut): held
    later = [n.id for w in words(plan[cut:]) for n in parser.feed(w)]
    assert later == ["n2"]
    final = parser.finish()
    assert [n.id for n in final.late] == ["n3"] and final.plan is not None and final.plan.format == "ideal"


def test_a_cut_string_is_never_yielded_as_a_complete_argument() -> None:
    plan = '[{"id": "n1", "tool": "search_web", "params": {"query": "Paris museums open on Monday"}}, ' \
           '{"id": "n2", "tool": "get_weather", "params": {"city": "Paris"}}]'
    parser = IncrementalPlanParser(TOOLS, agents=AGENTS)
    seen = [n for ch in plan for n in parser.feed(ch)]  # character by character
    assert [n.params for n in seen] == [{"query": "Paris museums open on Monday"}]


def test_a_node_naming_a_later_node_waits_for_it() -> None:
    plan = json.dumps([
        {"id": "n1", "tool": "get_weather", "params": {"city": "Paris"}, "depends_on": ["n3"]},
        {"id": "n2", "tool": "get_weather", "params": {"city": "Rome"}},
        {"id": "n3", "tool": "get_time", "params": {"timezone": "Europe/Paris"}},
        {"id": "n4", "tool": "get_time", "params": {"timezone": "Europe/Rome"}},
    ])
    parser = IncrementalPlanParser(TOOLS, agents=AGENTS)
    order = [n for w in words(plan) for n in parser.feed(w)]
    assert [n.id for n in order] == ["n2", "n3", "n1"]  # n1 only after n3, and with its dependency
    assert order[2].depends_on == ["n3"]
    assert [n.id for n in parser.finish().late] == ["n4"]


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
