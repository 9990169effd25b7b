"""Tool mode grounds the model's one call in the request, like a plan: a place the query contradicts
is not run; the model is asked again with the reason, and if it still contradicts the request, the
rules' call runs and the answer says why."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from saber.agent import Agent
from saber.events import Plan, ToolCallEvent
from saber.llm.types import Completion, ToolCall
from saber.testing import ScriptedModel
from saber.tools import tool


@tool(name="get_weather")
async def city_weather(city: str) -> str:
    """Weather of a city (a test tool with a fixed report)."""
    await asyncio.sleep(0)
    return f"{city}: sunny, 21°C"


def call(name: str, **arguments: str) -> Completion:
    return Completion(tool_calls=(ToolCall(id="c1", name=name, arguments=arguments),))


def executed(answer: object) -> ToolCallEvent:
    return next(e for e in answer.events if isinstance(e, ToolCallEvent))  # type: ignore[attr-defined]


def grounding(answer: object) -> list[str]:
    return [w for e in answer.events if isinstance(e, Plan) and e.source == "grounding"  # type: ignore[attr-defined]
            for w in e.warnings]


async def test_a_zone_the_query_contradicts_is_asked_again_and_the_corrected_call_runs(
        make_agent: Callable[..., Agent]) -> None:
    model = ScriptedModel([call("get_time", timezone="Asia/Shanghai"), call("get_time", timezone="Asia/Tokyo"),
                           "东京现在是下午。"])
    agent = make_agent(model)
    answer = await agent.ask("东京现在几点", user_id="u1")
    done = executed(answer)
    assert answer.mode == "tool" and done.params == {"timezone": "Asia/Tokyo"} and "Asia/Tokyo" in done.tool_result
    retry = model.calls[1]
    assert retry.tools == ["get_time"] and "Asia/Shanghai" in retry.prompt and "东京" in retry.messages[-1].content
    warnings = grounding(answer)
    assert "'Asia/Shanghai' is a place the request does not name (it names 东京)" in warnings[0]
    assert "asked again with the reason, the model called get_time(timezone='Asia/Tokyo')" in warnings[-1]
    assert answer.answer == "东京现在是下午。"
    model.assert_complete()


async def test_a_model_that_keeps_contradicting_the_query_gets_the_rules_call_and_the_answer_says_why(
        make_agent: Callable[..., Agent]) -> None:
    model = ScriptedModel([call("get_time", timezone="Asia/Shanghai"), call("get_time", timezone="Asia/Shanghai"),
                           "现在是下午。"])
    agent = make_agent(model)
    answer = await agent.ask("东京现在几点", user_id="u1")
    done = executed(answer)
    assert done.params == {"timezone": "东京"} and "Asia/Tokyo" in done.tool_result
    assert answer.answer == ("现在是下午。\n\n注：模型给出的调用 get_time(timezone='Asia/Shanghai') 与请求不符（请求中提到的是 东京），"
                             "再次询问也未改正；改用根据请求得出的调用 get_time(timezone='东京')。")
    assert "asking the model again did not fix its call; the rules' call get_time(timezone='东京') runs" in grounding(answer)[-1]
    model.assert_complete()


async def test_weather_in_paris_is_not_answered_with_london(make_agent: Callable[..., Agent]) -> None:
    model = ScriptedModel([call("get_weather", city="London"), call("get_weather", city="Paris"), "Sunny in Paris."])
    agent = make_agent(model, builtin=False, tools=[city_weather])
    answer = await agent.ask("What's the weather in Paris?", user_id="u1")
    assert executed(answer).params == {"city": "Paris"} and answer.answer == "Sunny in Paris."
    assert "'London' is a place the request does not name (it names Paris)" in grounding(answer)[0]

    stubborn = ScriptedModel([call("get_weather", city="London"), call("get_weather", city="London"), "Sunny."])
    agent = make_agent(stubborn, builtin=False, tools=[city_weather])
    answer = await agent.ask("What's the weather in Paris?", user_id="u2")
    assert executed(answer).params == {"city": "Paris"}
    assert answer.answer == ("Sunny.\n\nNote: the model's call get_weather(city='London') contradicted the request "
                             "(the request names Paris), and asking it again did not fix it; the call "
                             "get_weather(city='Paris'), made from the request itself, was run instead.")


async def test_a_preferred_city_does_not_override_the_place_the_query_names(make_agent: Callable[..., Agent]) -> None:
    model = ScriptedModel([call("get_weather", city="London"), call("get_weather", city="Paris"), "Sunny in Paris."])
    agent = make_agent(model, builtin=False, tools=[city_weather])
    assert agent.services.memory is not None
    await agent.services.memory.set_preferences("u1", {"city": "London"})
    answer = await agent.ask("What's the weather in Paris?", user_id="u1")
    assert executed(answer).params == {"city": "Paris"}


async def test_a_call_that_fits_the_request_is_not_asked_again(make_agent: Callable[..., Agent]) -> None:
    model = ScriptedModel([call("get_time", timezone="Asia/Tokyo"), "东京现在是下午。"])
    agent = make_agent(model)
    answer = await agent.ask("东京现在几点", user_id="u1")
    assert executed(answer).params == {"timezone": "Asia/Tokyo"} and not grounding(answer)
    assert len(model.calls) == 2
