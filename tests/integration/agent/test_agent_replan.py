"""Replanning with the model (on by default, bounded by graph.max_replan, counted in done's usage).

The model is asked for replacement nodes when a node fails or a result is empty, never when
every node returned something."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from conftest import settings_for
from saber.agent import Agent
from saber.events import NodeDone, Replan
from saber.testing import ScriptedModel
from saber.tools import ToolError, tool


@tool(name="search_web")
def broken_search(query: str) -> str:
    """Web search that is down."""
    raise ToolError("search backend is down", retryable=False)


@tool(name="get_time")
def zone_time(timezone: str = "UTC") -> str:
    """Time in a zone (a test tool with a fixed time)."""
    return f"12:00 in {timezone}"


@tool
def lookup(key: str) -> str:
    """Look a key up (a test tool that finds nothing)."""
    return ""


def _plan(*nodes: tuple[str, str, dict[str, str]]) -> str:
    return json.dumps([{"id": i, "tool": t, "params": p} for i, t, p in nodes])


SEARCH = _plan(("n1", "search_web", {"query": "time in Tokyo"}))


async def test_a_failed_node_gets_one_replan_by_default_whose_nodes_run(make_agent: Callable[..., Agent]) -> None:
    replacement = _plan(("n2", "get_time", {"timezone": "Asia/Tokyo"}))
    model = ScriptedModel([SEARCH, replacement, "It is 12:00 in Tokyo."])
    agent = make_agent(model, builtin=False, tools=[broken_search, zone_time])
    answer = await agent.ask("search the time in Tokyo", user_id="u1", mode="react")
    (replan,) = answer.of_type("replan")
    assert isinstance(replan, Replan) and replan.added == ["n2"] and "search backend is down" in replan.reason
    assert {e.id: e.status for e in answer.events if isinstance(e, NodeDone)} == {"n1": "failed", "n2": "done"}
    assert "search backend is down" in model.calls[1].prompt and "12:00 in Asia/Tokyo" in model.calls[2].prompt
    assert answer.usage["replans"] == 1
    assert answer.usage["prompt_tokens"] >= sum(len(c.prompt) // 4 for c in model.calls) - 3
    model.assert_complete()


async def test_a_graph_whose_nodes_all_answered_makes_no_replan_call(make_agent: Callable[..., Agent]) -> None:
    model = ScriptedModel([_plan(("n1", "get_time", {"timezone": "Asia/Tokyo"})), "It is 12:00 in Tokyo."])
    answer = await make_agent(model, builtin=False, tools=[zone_time]).ask("time in Tokyo", user_id="u1", mode="react")
    assert len(model.calls) == 2 and not answer.of_type("replan") and answer.usage["replans"] == 0
    model.assert_complete()


async def test_an_empty_result_is_replanned_once_the_graph_drains(make_agent: Callable[..., Agent]) -> None:
    model = ScriptedModel([_plan(("n1", "lookup", {"key": "tokyo"})), "[]", "Nothing was found."])
    answer = await make_agent(model, builtin=False, tools=[lookup]).ask("look up tokyo", user_id="u1", mode="react")
    assert "n1 (lookup) returned nothing" in model.calls[1].prompt
    (replan,) = answer.of_type("replan")
    assert isinstance(replan, Replan) and replan.added == [] and answer.usage["replans"] == 1
    model.assert_complete()


async def test_max_replan_zero_asks_the_model_for_no_replan(make_agent: Callable[..., Agent], tmp_path: Path) -> None:
    model = ScriptedModel([SEARCH, "Search is down."])
    agent = make_agent(model, builtin=False, tools=[broken_search, zone_time],
                       settings=settings_for(tmp_path, graph={"max_replan": 0}))
    answer = await agent.ask("search the time in Tokyo", user_id="u1", mode="react")
    assert len(model.calls) == 2 and not answer.of_type("replan") and answer.usage["replans"] == 0
    model.assert_complete()


async def test_replans_that_keep_failing_stop_at_the_bound_with_an_honest_answer(
        make_agent: Callable[..., Agent]) -> None:
    again = [_plan((f"n{i}", "search_web", {"query": f"time in Tokyo, try {i}"})) for i in (2, 3, 4)]
    model = ScriptedModel([SEARCH, again[0], again[1], "Here is what I found."])
    agent = make_agent(model, builtin=False, tools=[broken_search, zone_time])
    answer = await agent.ask("search the time in Tokyo", user_id="u1", mode="react")
    assert agent.settings.graph.max_replan == 2
    assert [r.added for r in answer.of_type("replan") if isinstance(r, Replan)] == [["n2"], ["n3"]]
    assert {e.id: e.status for e in answer.events if isinstance(e, NodeDone)} == {
        "n1": "failed", "n2": "failed", "n3": "failed"}
    assert len(model.calls) == 4 and answer.usage["replans"] == 2
    assert all(f"[n{i} search_web" in model.calls[3].prompt for i in (1, 2, 3)), "the answer sees every failure"
    assert answer.answer.startswith("Here is what I found.\n\nSteps that failed: search_web")
    model.assert_complete()
