"""Converting a given time between places, through the whole agent: without a model (router →
convert_time → rule-built answer) and with one (the model's call, and the tool's card in the plan)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import settings_for
from saber.agent import Agent
from saber.events import Route, ToolCallEvent
from saber.llm.types import Completion, ToolCall
from saber.testing import ScriptedModel
from saber.testing.openmeteo import fake_open_meteo


def executed(answer: object) -> ToolCallEvent:
    return next(e for e in answer.events if isinstance(e, ToolCallEvent))  # type: ignore[attr-defined]


@pytest.mark.parametrize(("query", "said"), [
    ("把北京时间2026年1月15日下午3点换算成伦敦时间", "北京 2026-01-15 星期四 15:00，是伦敦 2026-01-15 星期四 07:00。"),
    ("把北京时间2026年7月15日下午3点换算成伦敦时间", "北京 2026-07-15 星期三 15:00，是伦敦 2026-07-15 星期三 08:00。"),
    ("convert 3 pm Beijing time to London on 2026-07-15",
     "15:00 on Wednesday, 2026-07-15 in Beijing (北京), China (CST, Asia/Shanghai, UTC+08:00) is 08:00 on Wednesday, "
     "2026-07-15 in London (伦敦), United Kingdom (BST, Europe/London, UTC+01:00) (the date 2026-07-15 was given)."),
    ("10:00 UTC on 2026-01-15 in Asia/Kolkata", "10:00 on Thursday, 2026-01-15 in UTC is 15:30 on Thursday, 2026-01-15 "
                                                "in Asia/Kolkata (IST, UTC+05:30) (the date 2026-01-15 was given)."),
])
async def test_a_conversion_without_a_model_is_answered_with_the_converted_time(
        make_agent: Callable[..., Agent], query: str, said: str) -> None:
    answer = await make_agent(None).ask(query, user_id="u1")
    route = next(e for e in answer.events if isinstance(e, Route))
    assert (route.mode, route.rule) == ("tool", "keywords:tool(convert)") and executed(answer).tool_name == "convert_time"
    assert answer.answer.startswith(said + "\n\n")


async def test_a_bare_time_says_it_is_today_in_the_source_place(make_agent: Callable[..., Agent]) -> None:
    answer = await make_agent(None).ask("convert 3 pm Beijing time to London", user_id="u1")
    assert "no date was given, so the date is today in Beijing" in answer.answer
    assert executed(answer).params == {"time": "3 pm", "from_timezone": "Beijing", "to_timezone": "London", "date": None}


async def test_an_unknown_place_is_named_in_the_answer(tmp_path: Path, make_agent: Callable[..., Agent]) -> None:
    with fake_open_meteo() as geo:
        agent = make_agent(None, settings=settings_for(tmp_path, weather={"geocoding_url": geo.geocoding_url}))
        answer = await agent.ask("convert 3 pm in Gotham to London time", user_id="u1")
    call = executed(answer)
    assert call.params["from_timezone"] == "Gotham" and call.error is not None
    assert "unknown place 'Gotham'" in call.error and "Gotham" in answer.answer


async def test_with_a_model_its_call_runs_and_the_answer_is_its_own(make_agent: Callable[..., Agent]) -> None:
    chosen = Completion(tool_calls=(ToolCall(id="c1", name="convert_time", arguments={
        "time": "15:00", "from_timezone": "Asia/Shanghai", "to_timezone": "Europe/London", "date": "2026-07-15"}),))
    model = ScriptedModel([chosen, "北京时间下午3点是伦敦时间早上8点（夏令时）。"])
    answer = await make_agent(model).ask("把北京时间2026年7月15日下午3点换算成伦敦时间", user_id="u1")
    assert model.calls[0].tools == ["convert_time"]
    assert "is 08:00 on Wednesday, 2026-07-15 in Europe/London (BST, UTC+01:00)" in str(executed(answer).tool_result)
    assert "08:00" in model.calls[1].prompt and answer.answer == "北京时间下午3点是伦敦时间早上8点（夏令时）。"
    model.assert_complete()


async def test_the_planner_is_shown_the_conversion_tool(make_agent: Callable[..., Agent]) -> None:
    plan = json.dumps([
        {"id": "n1", "tool": "convert_time", "params": {"time": "下午3点", "from_timezone": "北京", "to_timezone": "伦敦",
                                                        "date": "2026-01-15"}, "depends_on": []},
        {"id": "n2", "tool": "get_weather", "params": {"city": "伦敦"}, "depends_on": []},
    ], ensure_ascii=False)
    model = ScriptedModel([plan, "伦敦是早上7点；天气服务无法连接。"])
    answer = await make_agent(model).ask("把北京时间2026年1月15日下午3点换算成伦敦时间，再查伦敦天气", user_id="u1")
    assert answer.mode == "react" and "convert_time" in model.calls[0].prompt
    assert "is 07:00 on Thursday, 2026-01-15 in London" in model.calls[1].prompt


def convert(**arguments: str) -> Completion:
    return Completion(tool_calls=(ToolCall(id="c1", name="convert_time", arguments=arguments),))


async def test_a_model_that_swaps_the_places_is_asked_again_then_overruled(make_agent: Callable[..., Agent]) -> None:
    query = "把北京时间2026年1月15日下午3点换算成伦敦时间"
    swapped = convert(time="15:00", from_timezone="Europe/London", to_timezone="Asia/Shanghai", date="2026-01-15")
    right = convert(time="15:00", from_timezone="Asia/Shanghai", to_timezone="Europe/London", date="2026-01-15")
    model = ScriptedModel([swapped, right, "伦敦是早上7点。"])
    answer = await make_agent(model).ask(query, user_id="u1")
    assert executed(answer).params["to_timezone"] == "Europe/London"
    assert "is 07:00 on Thursday, 2026-01-15 in Europe/London" in str(executed(answer).tool_result)
    assert "from_timezone='Europe/London' is not the place the request gives for from_timezone (北京)" in \
        model.calls[1].messages[-1].content
    assert answer.answer == "伦敦是早上7点。"

    stubborn = ScriptedModel([swapped, swapped, "伦敦是早上7点。"])
    answer = await make_agent(stubborn).ask(query, user_id="u2")
    params = executed(answer).params
    assert (params["from_timezone"], params["to_timezone"]) == ("北京", "伦敦")
    assert "is 07:00 on Thursday, 2026-01-15 in London" in str(executed(answer).tool_result)
    assert "再次询问也未改正" in answer.answer


async def test_a_time_the_query_does_not_give_is_not_converted(make_agent: Callable[..., Agent]) -> None:
    wrong = convert(time="14:00", from_timezone="北京", to_timezone="伦敦", date="2026-01-15")
    model = ScriptedModel([wrong, wrong, "伦敦是早上7点。"])
    answer = await make_agent(model).ask("把北京时间2026年1月15日下午3点换算成伦敦时间", user_id="u1")
    assert executed(answer).params["time"] == "下午3点"
    assert "is 07:00 on Thursday, 2026-01-15 in London" in str(executed(answer).tool_result)
    assert "time='14:00' is not the time the request gives (下午3点)" in model.calls[1].messages[-1].content
    assert answer.answer.endswith("与请求不符，再次询问也未改正；改用根据请求得出的调用 convert_time(time='下午3点', "
                                  "from_timezone='北京', to_timezone='伦敦', date='2026-01-15')。")
