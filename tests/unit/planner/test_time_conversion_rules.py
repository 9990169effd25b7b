"""A time-conversion question, without a model: the router picks convert_time (tool mode) and the
rule planner fills its arguments from the query; two clocks asked are still two get_time calls."""

from __future__ import annotations

import pytest

from saber.agent.router import route
from saber.config import Settings
from saber.planner import rule_plan
from saber.tools.builtin import builtin_tools
from saber.tools.builtin.conversion import conversion_request
from saber.tools.builtin.wallclock import find_clock_time

TOOLS = {t.name: t for t in builtin_tools(Settings(search={"backend": "none"}))}

CONVERSIONS = [
    ("把北京时间下午3点换算成伦敦时间", {"time": "下午3点", "from_timezone": "北京", "to_timezone": "伦敦"}),
    ("convert 3 pm Beijing time to London", {"time": "3 pm", "from_timezone": "Beijing", "to_timezone": "London"}),
    ("纽约时间明天上午9:30是东京几点", {"time": "上午9:30", "from_timezone": "纽约", "to_timezone": "东京", "date": "明天"}),
    ("10:00 UTC in Asia/Kolkata", {"time": "10:00", "from_timezone": "UTC", "to_timezone": "Asia/Kolkata"}),
    ("东京时间早上8点在纽约是几点", {"time": "早上8点", "from_timezone": "东京", "to_timezone": "纽约"}),
    ("What time is it in Tokyo when it's 9am in New York?", {"time": "9am", "from_timezone": "New York",
                                                             "to_timezone": "Tokyo"}),
    ("If it is 3:30pm in London on July 4, what time is it in Sydney?",
     {"time": "3:30pm", "from_timezone": "London", "to_timezone": "Sydney", "date": "July 4"}),
]


@pytest.mark.parametrize(("query", "params"), CONVERSIONS)
def test_a_conversion_is_one_convert_time_call_in_tool_mode(query: str, params: dict[str, str]) -> None:
    decision = route(query, tools=list(TOOLS), knowledge_loaded=False)
    assert (decision.mode, decision.tools, decision.rule) == ("tool", ["convert_time"], "keywords:tool(convert)")
    [node] = rule_plan(query, {"convert_time": TOOLS["convert_time"]}).nodes
    assert node.tool == "convert_time" and {k: v for k, v in node.params.items() if v is not None} == params


@pytest.mark.parametrize("query", ["东京和纽约现在几点", "What time is it in Tokyo and New York?", "明天下午3点北京和上海的天气",
                                   "北京现在几点", "下午3点开会", "time in UTC+5:30 and UTC-3"])
def test_questions_that_convert_nothing_are_not_conversions(query: str) -> None:
    assert conversion_request(query) is None
    assert route(query, tools=list(TOOLS), knowledge_loaded=False).tools != ["convert_time"]


def test_two_clocks_asked_are_still_two_get_time_calls() -> None:
    assert route("东京和纽约现在几点", tools=list(TOOLS), knowledge_loaded=False).mode == "react"
    assert [(n.tool, n.params) for n in rule_plan("东京和纽约现在几点", TOOLS).nodes] == [
        ("get_time", {"timezone": "东京"}), ("get_time", {"timezone": "纽约"})]


def test_a_conversion_beside_another_question_is_one_step_of_a_plan() -> None:
    query = "把北京时间下午3点换算成伦敦时间，再查伦敦天气"
    assert route(query, tools=list(TOOLS), knowledge_loaded=False).mode == "react"
    assert [(n.tool, n.params.get("to_timezone") or n.params.get("city")) for n in rule_plan(query, TOOLS).nodes] == [
        ("convert_time", "伦敦"), ("get_weather", "伦敦")]


def test_without_the_convert_tool_the_time_question_goes_on_as_before() -> None:
    tools = [name for name in TOOLS if name != "convert_time"]
    decision = route("把北京时间下午3点换算成伦敦时间", tools=tools, knowledge_loaded=False)
    assert decision.mode == "react" and "convert_time" not in decision.tools


@pytest.mark.parametrize(("text", "hm"), [
    ("下午3点", (15, 0)), ("3 pm", (15, 0)), ("9:30 pm", (21, 30)), ("上午9:30", (9, 30)), ("下午三点半", (15, 30)),
    ("中午12点", (12, 0)), ("12am", (0, 0)), ("midnight", (0, 0)), ("3.30pm", (15, 30)), ("二十三点", (23, 0)),
])
def test_clock_times_as_written(text: str, hm: tuple[int, int]) -> None:
    found = find_clock_time(text)
    assert found is not None and (found.hour, found.minute) == hm and found.text == text


@pytest.mark.parametrize("query", ["东京现在几点？把北京时间下午3点换算成伦敦时间",
                                   "What time is it in Paris? And convert 3 pm Beijing time to London."])
def test_another_sentence_asking_a_clock_keeps_its_get_time(query: str) -> None:
    decision = route(query, tools=list(TOOLS), knowledge_loaded=False)
    assert (decision.mode, decision.rule) == ("react", "keywords:react(convert+time)")
    calls = [(n.tool, n.params.get("to_timezone") or n.params.get("timezone")) for n in rule_plan(query, TOOLS).nodes]
    assert calls[0][0] == "convert_time" and calls[1][0] == "get_time" and len(calls) == 2
    assert calls[0][1] in ("伦敦", "London") and calls[1][1] in ("东京", "Paris")
