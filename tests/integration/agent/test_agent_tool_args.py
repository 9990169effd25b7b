"""Tool mode with a model: the model chooses the arguments (native calls, else a JSON prompt); the
rules are used only when the model fails. And the query length limit at the agent boundary."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import settings_for
from saber.agent import Agent
from saber.events import Error, Plan, ToolCallEvent
from saber.llm.base import ModelError
from saber.testing import ScriptedModel
from saber.tools import tool


@tool(name="get_weather")
async def city_weather(city: str) -> str:
    """Weather of a city (a test tool with a fixed report)."""
    await asyncio.sleep(0)
    return f"{city}: sunny, 21°C"


def call_of(answer: object) -> ToolCallEvent:
    return next(e for e in answer.events if isinstance(e, ToolCallEvent))  # type: ignore[attr-defined]


async def test_the_models_arguments_win_over_the_rules(make_agent: Callable[..., Agent]) -> None:
    # the rules cannot read this place; the model can
    model = ScriptedModel(['{"city": "Boulder, Colorado"}', "Sunny in Boulder."])
    agent = make_agent(model, builtin=False, tools=[city_weather])
    answer = await agent.ask("how's the weather where the Flatirons are, Boulder Colorado", user_id="u1")
    assert answer.mode == "tool" and call_of(answer).params == {"city": "Boulder, Colorado"}
    assert answer.answer == "Sunny in Boulder."


async def test_an_endpoint_without_function_calling_gets_the_json_prompt(make_agent: Callable[..., Agent]) -> None:
    model = ScriptedModel([ModelError("HTTP 400: tools are not supported"), '```json\n{"city": "大理"}\n```', "大理晴。"])
    agent = make_agent(model, builtin=False, tools=[city_weather])
    answer = await agent.ask("大理天气怎么样", user_id="u1")
    assert model.calls[0].tools == ["get_weather"] and model.calls[1].tools == []
    assert call_of(answer).params == {"city": "大理"}
    assert any(isinstance(e, Error) and "JSON prompt" in e.message for e in answer.events)


async def test_the_rules_are_the_fallback_when_the_model_fails(make_agent: Callable[..., Agent]) -> None:
    model = ScriptedModel([ModelError("down"), ModelError("still down"), "北京晴。"])
    agent = make_agent(model, builtin=False, tools=[city_weather])
    answer = await agent.ask("北京天气怎么样", user_id="u1")
    assert call_of(answer).params == {"city": "北京"}
    assert any(isinstance(e, Error) and "using the rules" in e.message for e in answer.events)


async def test_arguments_the_tool_rejects_fall_back_to_the_rules(make_agent: Callable[..., Agent]) -> None:
    model = ScriptedModel(['{"town": "Paris"}', "Paris is sunny."])
    agent = make_agent(model, builtin=False, tools=[city_weather])
    answer = await agent.ask("weather in Paris", user_id="u1")
    assert call_of(answer).params == {"city": "Paris"}


async def test_a_city_the_model_copied_from_the_prompt_example_is_replaced_by_the_one_asked_for(
        make_agent: Callable[..., Agent]) -> None:
    """The model's arguments are checked against the planner prompt's example (Shanghai); the rules'
    own call takes its values from the request, so only a model-chosen call is checked."""
    model = ScriptedModel(['{"city": "Shanghai"}', '{"city": "Shanghai"}', "Paris is sunny."])  # asked again, it insists
    agent = make_agent(model, builtin=False, tools=[city_weather])
    answer = await agent.ask("weather in Paris today", user_id="u1")
    assert call_of(answer).params == {"city": "Paris"}
    grounding = [e for e in answer.events if isinstance(e, Plan) and e.source == "grounding"]
    assert len(grounding) == 1 and "Shanghai" in grounding[0].warnings[0]
    assert answer.answer.startswith("Paris is sunny.\n\nNote: the model's call get_weather(city='Shanghai')")
    model.assert_complete()


async def test_a_query_over_the_limit_is_refused_before_any_event(tmp_path: Path, make_agent: Callable[..., Agent]) -> None:
    agent = make_agent(None, settings=settings_for(tmp_path, agent={"max_query_chars": 100}))
    with pytest.raises(ValueError, match=r"query is 101 characters, over the limit of 100 .*max_query_chars"):
        await agent.ask("x" * 101, user_id="u1")
    assert (await agent.ask("y" * 100, user_id="u1")).answer
