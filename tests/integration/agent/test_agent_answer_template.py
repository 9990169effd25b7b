"""The plan's answer template: a lookup answered with the reply the planner wrote ahead, filled
with the results, in one model call; the generator writes the answer whenever that is not safe."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import settings_for
from saber.agent import Agent
from saber.events import Done, Plan, Token
from saber.testing import ScriptedModel
from saber.tools import ToolError, tool

CAPITALS = {"Japan": "Tokyo", "Canada": "Ottawa"}


@tool(name="lookup_capital")
def capital(country: str) -> str:
    """The capital city of a country."""
    if country not in CAPITALS:
        raise ToolError(f"country: unknown value {country!r}", retryable=False)
    return CAPITALS[country]


@tool(name="get_weather")
def weather(city: str) -> str:
    """Current weather of a city."""
    return f"{city}: sunny, 14°C"


TOOLS = [capital, weather]
QUERY = "What's the weather like in the capital of Japan right now?"


def plan(country: str = "Japan", template: str | None = "The capital of Japan is $n1. The weather there: $n2.") -> str:
    items: list[dict[str, Any]] = [{"id": "n1", "tool": "lookup_capital", "params": {"country": country}},
                                   {"id": "n2", "tool": "get_weather", "params": {"city": "$n1"}}]
    if template is not None:
        items.append({"answer": template})
    return json.dumps(items, ensure_ascii=False, separators=(",", ":"))


def done_of(events: list[Any]) -> Done:
    done = events[-1]
    assert isinstance(done, Done)
    return done


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "whole"])
async def test_a_lookup_is_answered_with_the_plans_template_in_one_model_call(
        streamed: bool, make_agent: Callable[..., Agent], tmp_path: Path) -> None:
    model = ScriptedModel([plan()])
    agent = make_agent(model, builtin=False, tools=TOOLS, settings=settings_for(tmp_path, planner={"stream": streamed}))
    answer = await agent.ask(QUERY, user_id="u1", mode="react")
    model.assert_complete()
    assert len(model.calls) == 1  # the plan; no generator call
    assert answer.answer == "The capital of Japan is Tokyo. The weather there: Tokyo: sunny, 14°C."
    tokens = [e.content for e in answer.events if isinstance(e, Token)]
    assert len(tokens) > 1 and "".join(tokens) == answer.answer  # streamed in pieces, like a model's answer
    done = done_of(answer.events)
    assert done.answer_template is True and done.model == "scripted"
    shown = next(e for e in answer.events if isinstance(e, Plan))
    assert shown.answer == "The capital of Japan is ${n1}. The weather there: ${n2}."


async def test_a_template_naming_a_step_the_plan_lacks_is_dropped_and_the_generator_answers(
        make_agent: Callable[..., Agent], tmp_path: Path) -> None:
    model = ScriptedModel([plan(template="The weather: $n3"), "Tokyo is sunny, 14°C."])
    agent = make_agent(model, builtin=False, tools=TOOLS, settings=settings_for(tmp_path))
    answer = await agent.ask(QUERY, user_id="u1", mode="react")
    model.assert_complete()
    assert answer.answer == "Tokyo is sunny, 14°C." and done_of(answer.events).answer_template is False
    shown = next(e for e in answer.events if isinstance(e, Plan))
    assert shown.answer is None and any("$n3 names no step of the plan" in w for w in shown.warnings)
    assert "Tokyo: sunny, 14°C" in model.calls[1].prompt  # the generator saw the results


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "whole"])
async def test_a_failed_step_means_the_generator_answers_and_owns_up(
        streamed: bool, make_agent: Callable[..., Agent], tmp_path: Path) -> None:
    model = ScriptedModel([plan(country="Atlantis"), "I could not find that country's capital."])
    settings = settings_for(tmp_path, planner={"stream": streamed}, graph={"max_replan": 0})
    agent = make_agent(model, builtin=False, tools=TOOLS, settings=settings)
    answer = await agent.ask("What's the weather in the capital of Atlantis?", user_id="u1", mode="react")
    model.assert_complete()
    assert answer.answer.startswith("I could not find that country's capital.")
    assert "$n1" not in answer.answer and "${n1}" not in answer.answer
    assert done_of(answer.events).answer_template is False
    assert "failed" in model.calls[1].prompt


async def test_a_failed_step_the_template_does_not_name_still_sends_the_answer_to_the_generator(
        make_agent: Callable[..., Agent], tmp_path: Path) -> None:
    items = [{"id": "n1", "tool": "lookup_capital", "params": {"country": "Atlantis"}},
             {"id": "n2", "tool": "get_weather", "params": {"city": "Paris"}}, {"answer": "Weather: $n2"}]
    model = ScriptedModel([json.dumps(items), "Paris is sunny; Atlantis has no known capital."])
    agent = make_agent(model, builtin=False, tools=TOOLS, settings=settings_for(tmp_path, graph={"max_replan": 0}))
    answer = await agent.ask("Capital of Atlantis, and the weather in Paris?", user_id="u1", mode="react")
    model.assert_complete()
    assert answer.answer.startswith("Paris is sunny; Atlantis has no known capital.")
    assert done_of(answer.events).answer_template is False


async def test_a_replanned_run_is_answered_by_the_generator(make_agent: Callable[..., Agent], tmp_path: Path) -> None:
    fixed = json.dumps([{"id": "n3", "tool": "lookup_capital", "params": {"country": "Japan"}},
                        {"id": "n4", "tool": "get_weather", "params": {"city": "$n3"}}])
    model = ScriptedModel([plan(country="Japn"), fixed, "Tokyo is sunny, 14°C."])
    agent = make_agent(model, builtin=False, tools=TOOLS, settings=settings_for(tmp_path, graph={"max_replan": 1}))
    answer = await agent.ask(QUERY, user_id="u1", mode="react")
    model.assert_complete()  # plan, replan, generator
    assert answer.answer.startswith("Tokyo is sunny, 14°C.") and done_of(answer.events).answer_template is False


async def test_with_the_setting_off_the_generator_always_answers(make_agent: Callable[..., Agent], tmp_path: Path) -> None:
    model = ScriptedModel([plan(), "Tokyo is sunny, 14°C."])
    settings = settings_for(tmp_path, planner={"answer_template": False})
    agent = make_agent(model, builtin=False, tools=TOOLS, settings=settings)
    answer = await agent.ask(QUERY, user_id="u1", mode="react")
    model.assert_complete()
    assert answer.answer == "Tokyo is sunny, 14°C." and done_of(answer.events).answer_template is False
