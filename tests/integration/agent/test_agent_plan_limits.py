"""Bad plans get a clear event and an honest answer, streamed or not: a plan too long, cut off,
cyclic, or naming an unknown tool runs what it can, and the plan event, the task's checkpoint and
the answer say what was left out — never a hang, never a wrong call presented as right."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import settings_for
from saber.agent import Agent
from saber.agent.agent import Answer
from saber.events import Plan
from saber.llm.limits import CHARS_PER_TOKEN
from saber.llm.types import Completion
from saber.testing import ScriptedModel
from saber.tools import tool

CALLS: list[tuple[str, dict[str, Any]]] = []


@tool(name="get_weather")
def weather(city: str) -> str:
    """Current weather of a city."""
    CALLS.append(("get_weather", {"city": city}))
    return f"{city}: sunny"


@tool(name="search_web")
def search(query: str) -> str:
    """Search the web."""
    CALLS.append(("search_web", {"query": query}))
    return f"results for {query}"


CITIES = ["Paris", "Rome", "Berlin", "Madrid", "Lisbon"]


def plan_text(*nodes: dict[str, Any]) -> str:
    return json.dumps(list(nodes))


def weather_node(i: int, city: str, **extra: Any) -> dict[str, Any]:
    return {"id": f"n{i}", "type": "tool", "tool": "get_weather", "params": {"city": city}, "depends_on": [],
            "race_group": None, **extra}


FIVE = plan_text(*(weather_node(i, c) for i, c in enumerate(CITIES, 1)))
QUERY = "weather in " + ", ".join(CITIES)


async def ask(make_agent: Callable[..., Agent], tmp_path: Path, reply: Any, *, streamed: bool, query: str = QUERY,
              replan: str | None = None, **settings: Any) -> tuple[Answer, Plan, Agent]:
    """Ask with the planner's ``reply``; ``replan`` is the model's reply when it is asked again for
    what the plan lost (without it, replanning is off)."""
    CALLS.clear()
    if replan is None:
        settings.setdefault("graph", {}).setdefault("max_replan", 0)
    model = ScriptedModel([reply, *([replan] if replan is not None else []), "Here is what I found."])
    agent = make_agent(model, builtin=False, tools=[weather, search],
                       settings=settings_for(tmp_path, **{**settings, "planner": {"stream": streamed, **settings.get("planner", {})}}))
    answer = await agent.ask(query, user_id="u1", mode="react")
    plan = next(e for e in answer.events if isinstance(e, Plan))
    model.assert_complete()
    return answer, plan, agent


streamed_or_not = pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "whole"])


@streamed_or_not
async def test_a_plan_over_planner_max_nodes_runs_its_first_nodes_and_says_how_many_were_dropped(
        make_agent: Callable[..., Agent], tmp_path: Path, streamed: bool) -> None:
    answer, plan, agent = await ask(make_agent, tmp_path, FIVE, streamed=streamed, planner={"max_nodes": 3})
    assert [n["id"] for n in plan.nodes] == ["n1", "n2", "n3"]
    assert plan.truncated is not None and "5 nodes, over the limit of 3" in plan.truncated and plan.dropped_nodes == 2
    assert sorted(c["city"] for _, c in CALLS) == ["Berlin", "Paris", "Rome"]
    assert answer.answer.startswith("Here is what I found.\n\nNote: the plan was cut off (")
    assert "2 planned step(s) were dropped and not run" in answer.answer
    assert any(e.type == "token" and "cut off" in e.content for e in answer.events)  # type: ignore[attr-defined]
    tasks = await agent.tasks(unfinished=False)
    assert [t["plan_truncated"] for t in tasks] == [{"reason": plan.truncated, "dropped_nodes": 2}]


@streamed_or_not
async def test_a_plan_cut_by_the_token_limit_runs_its_complete_nodes_and_says_it_was_cut(
        make_agent: Callable[..., Agent], tmp_path: Path, streamed: bool) -> None:
    cut = FIVE[: FIVE.index('"Berlin"') + 4]  # in the middle of the third node's city
    reply = Completion(text=cut, finish_reason="length")
    answer, plan, _ = await ask(make_agent, tmp_path, reply, streamed=streamed)
    assert [n["params"]["city"] for n in plan.nodes] == ["Paris", "Rome"]  # no "Ber" invented
    assert plan.truncated is not None and "token limit" in plan.truncated and plan.dropped_nodes == 1
    assert sorted(c["city"] for _, c in CALLS) == ["Paris", "Rome"]
    assert "Note: the plan was cut off (the planner's output reached its token limit" in answer.answer
    assert "1 planned step(s) were dropped" in answer.answer


@streamed_or_not
async def test_a_plan_cut_by_the_token_limit_is_completed_by_a_replan(
        make_agent: Callable[..., Agent], tmp_path: Path, streamed: bool) -> None:
    """As a ReAct loop would ask again, the planner is asked for the steps the cut lost: given the
    two that ran, it writes the other three, and every city gets its one call."""
    cut = FIVE[: FIVE.index('"Berlin"') + 4]
    rest = plan_text(*(weather_node(i, c) for i, c in enumerate(CITIES[2:], 3)))
    answer, plan, _ = await ask(make_agent, tmp_path, Completion(text=cut, finish_reason="length"), streamed=streamed,
                                replan=rest)
    assert plan.truncated is not None and plan.dropped_nodes == 1
    assert sorted(c["city"] for _, c in CALLS) == sorted(CITIES)
    assert answer.usage["replans"] == 1
    assert answer.answer.endswith("Note: the first plan was incomplete (the planner's output reached its token limit); "
                                  "the planner was asked again for the missing steps.")


@streamed_or_not
async def test_a_chain_whose_first_step_names_an_unknown_tool_is_planned_again(
        make_agent: Callable[..., Agent], tmp_path: Path, streamed: bool) -> None:
    """The unknown tool takes its dependent step with it, so nothing is left to run: the replan is
    still asked, told which tool was unknown, and its plan runs."""
    wrong = plan_text({"id": "n1", "tool": "web_search", "params": {"query": "capital of Canada"}},
                      weather_node(2, "${n1}", depends_on=["n1"]))
    right = plan_text({"id": "n3", "tool": "search_web", "params": {"query": "capital of Canada"}},
                      weather_node(4, "${n3}", depends_on=["n3"]))
    answer, plan, _ = await ask(make_agent, tmp_path, wrong, streamed=streamed, query="weather in the capital of Canada",
                                replan=right)
    assert plan.nodes == [] and any("unknown tool 'web_search'" in w for w in plan.warnings)
    assert CALLS == [("search_web", {"query": "capital of Canada"}),
                     ("get_weather", {"city": "results for capital of Canada"})]
    assert answer.usage["replans"] == 1 and "the planner was asked again" in answer.answer


@streamed_or_not
async def test_a_replan_that_adds_nothing_leaves_the_honest_note(
        make_agent: Callable[..., Agent], tmp_path: Path, streamed: bool) -> None:
    reply = plan_text({"id": "n1", "tool": "rm_rf", "params": {"path": "/"}}, weather_node(2, "Paris"))
    answer, _, _ = await ask(make_agent, tmp_path, reply, streamed=streamed, query="weather in Paris", replan="[]")
    assert CALLS == [("get_weather", {"city": "Paris"})] and answer.usage["replans"] == 1
    assert "Note: 1 planned step(s) could not run and were skipped (n1: unknown tool 'rm_rf'" in answer.answer


@streamed_or_not
async def test_a_plan_naming_an_unknown_tool_runs_the_rest_and_says_which_step_was_skipped(
        make_agent: Callable[..., Agent], tmp_path: Path, streamed: bool) -> None:
    reply = plan_text({"id": "n1", "tool": "rm_rf", "params": {"path": "/"}}, weather_node(2, "Paris"))
    answer, plan, _ = await ask(make_agent, tmp_path, reply, streamed=streamed, query="weather in Paris")
    assert [n["id"] for n in plan.nodes] == ["n2"] and plan.truncated is None
    assert any("unknown tool 'rm_rf'" in w for w in plan.warnings)
    assert CALLS == [("get_weather", {"city": "Paris"})]
    assert "Note: 1 planned step(s) could not run and were skipped (n1: unknown tool 'rm_rf'" in answer.answer


@streamed_or_not
async def test_a_cycle_through_placeholders_never_runs_a_call_with_a_placeholder_in_it(
        make_agent: Callable[..., Agent], tmp_path: Path, streamed: bool) -> None:
    reply = plan_text(weather_node(1, "${n3}", depends_on=["n3"]), weather_node(2, "Paris"),
                      {"id": "n3", "tool": "search_web", "params": {"query": "city near ${n1}"}, "depends_on": ["n1"]})
    answer, plan, _ = await ask(make_agent, tmp_path, reply, streamed=streamed, query="weather in Paris")
    assert any(w.startswith("cycle") for w in plan.warnings)
    assert not any("${" in json.dumps(args) for _, args in CALLS), CALLS
    assert CALLS == [("get_weather", {"city": "Paris"})]
    assert "could not run and were skipped" in answer.answer and "a cycle" in answer.answer


@streamed_or_not
async def test_a_planner_stuck_writing_the_same_node_runs_it_once_and_the_answer_says_so(
        make_agent: Callable[..., Agent], tmp_path: Path, streamed: bool) -> None:
    node = json.dumps(weather_node(1, "Paris"))
    reply = "[" + ", ".join([node] * 60) + "]"
    answer, plan, _ = await ask(make_agent, tmp_path, reply, streamed=streamed, query="weather in Paris")
    assert [n["id"] for n in plan.nodes] == ["n1"]
    assert any("n1#2 dropped: it repeats n1 word for word" in w for w in plan.warnings)
    if not streamed:  # a whole completion is not watched for loops; its repeats are dropped
        assert plan.truncated is None and CALLS == [("get_weather", {"city": "Paris"})]
        assert "could not run and were skipped (n1#2: it repeats n1" in answer.answer
        return
    assert plan.truncated is not None and "kept repeating" in plan.truncated
    assert CALLS == [("get_weather", {"city": "Paris"})]  # cut early; the repeats are not run again
    assert "Note: the plan was cut off (the planner's output was cut: the model kept repeating" in answer.answer


@streamed_or_not
async def test_a_whole_plan_is_not_labelled(make_agent: Callable[..., Agent], tmp_path: Path, streamed: bool) -> None:
    answer, plan, agent = await ask(make_agent, tmp_path, FIVE, streamed=streamed)
    assert plan.truncated is None and plan.dropped_nodes == 0 and len(CALLS) == 5
    assert answer.answer == "Here is what I found."
    assert [t["plan_truncated"] for t in await agent.tasks(unfinished=False)] == [None]


@streamed_or_not
async def test_a_placeholder_naming_no_node_is_never_run_as_text(
        make_agent: Callable[..., Agent], tmp_path: Path, streamed: bool) -> None:
    reply = plan_text(weather_node(1, "Paris"), weather_node(2, "${n9}"))
    answer, plan, _ = await ask(make_agent, tmp_path, reply, streamed=streamed, query="weather in Paris")
    assert [n["id"] for n in plan.nodes] == ["n1"] and CALLS == [("get_weather", {"city": "Paris"})]
    assert "n2: its params use ${n9}, which names no node of the plan" in answer.answer


async def test_a_streamed_plan_past_the_planners_token_limit_is_cut_and_says_so(
        make_agent: Callable[..., Agent], tmp_path: Path) -> None:
    limit = 50  # tokens; the guard counts CHARS_PER_TOKEN characters a token, for endpoints that ignore max_tokens
    assert FIVE.index("}", FIVE.index('"Rome"')) + 2 < limit * CHARS_PER_TOKEN < FIVE.index('"Berlin"')  # in the 3rd node
    answer, plan, _ = await ask(make_agent, tmp_path, FIVE, streamed=True, llm={"max_tokens_planner": limit})
    assert plan.truncated is not None and "the plan passed the limit of 50 tokens" in plan.truncated
    assert plan.dropped_nodes == 1 and sorted(c["city"] for _, c in CALLS) == ["Paris", "Rome"]
    assert "Note: the plan was cut off (the planner's output was cut: the plan passed the limit of 50 tokens" \
        in answer.answer


async def test_a_chinese_request_is_told_in_chinese(make_agent: Callable[..., Agent], tmp_path: Path) -> None:
    reply = plan_text(*(weather_node(i, c) for i, c in enumerate(["北京", "上海", "广州"], 1)),
                      {"id": "n4", "tool": "rm_rf", "params": {}})
    answer, plan, _ = await ask(make_agent, tmp_path, reply, streamed=False, query="北京、上海和广州的天气",
                                planner={"max_nodes": 2})
    assert plan.dropped_nodes == 2 and len(CALLS) == 2
    assert "注意：执行计划被截断（计划有 4 个节点，超过上限 2）；2 个计划步骤被丢弃、没有执行" in answer.answer
