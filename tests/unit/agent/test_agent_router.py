"""The keyword router: every decision and the rule it names."""

from __future__ import annotations

import pytest

from saber.agent.router import RouteOptions, route

TOOLS = ["get_time", "get_weather", "search_web", "rag_search", "write_document"]


@pytest.mark.parametrize(
    ("query", "mode", "rule"),
    [
        ("现在几点，北京天气怎么样", "react", "keywords:react(time+weather)"),
        ("What time is it in Tokyo and what's the weather?", "react", "keywords:react(time+weather)"),
        ("帮我调研一下 K8s service 的几种类型，写成报告保存", "react", "keywords:react(research/report)"),
        ("Research vector databases", "react", "keywords:react(research/report)"),
        ("把这些资料整理成一份报告", "react", "keywords:react(research/report)"),
        ("write a report on HTTP caching", "react", "keywords:react(research/report)"),
        ("东京现在几点", "tool", "keywords:tool(time)"),
        ("上海天气怎么样", "tool", "keywords:tool(weather)"),
        ("what's the weather like in Paris", "tool", "keywords:tool(weather)"),
        ("帮我搜索一下 Python 3.13 的新特性", "tool", "keywords:tool(search)"),
        ("weather and time", "react", "keywords:react(time+weather)"),
        ("Tokyo weather and time", "react", "keywords:react(time+weather)"),
        ("我是研究生，北京今天天气怎么样", "tool", "keywords:tool(weather)"),
        ("快速排序的时间复杂度是什么", "chat", "default:chat"),
        ("what is the time complexity of quicksort", "chat", "default:chat"),
        ("研究表明喝茶有益吗", "chat", "default:chat"),
        ("你好", "chat", "keywords:chat(small talk)"),
        ("Tell me a joke", "chat", "keywords:chat(small talk)"),
        ("sometimes I wonder", "chat", "default:chat"),
    ],
)
def test_keyword_routes(query: str, mode: str, rule: str) -> None:
    decision = route(query, tools=TOOLS, knowledge_loaded=False)
    assert (decision.mode, decision.rule) == (mode, rule)


def test_rag_only_when_the_knowledge_base_has_chunks_and_nothing_else_matched() -> None:
    assert route("ClusterIP 和 NodePort 有什么区别", tools=TOOLS, knowledge_loaded=True).mode == "rag"
    assert route("ClusterIP 和 NodePort 有什么区别", tools=TOOLS, knowledge_loaded=False).mode == "chat"
    assert route("东京现在几点", tools=TOOLS, knowledge_loaded=True).mode == "tool"


def test_tool_need_without_the_tool_is_not_tool_mode() -> None:
    decision = route("上海天气怎么样", tools=["get_time"], knowledge_loaded=False)
    assert decision.mode == "chat"


def test_explicit_options_win() -> None:
    assert route("你好", tools=TOOLS, knowledge_loaded=False, options=RouteOptions(mode="react")).rule == "explicit:mode=react"
    one = route("上海天气", tools=TOOLS, knowledge_loaded=False, options=RouteOptions(selected_tools=["get_weather"]))
    assert (one.mode, one.tools) == ("tool", ["get_weather"])
    many = route("查一下", tools=TOOLS, knowledge_loaded=False, options=RouteOptions(selected_tools=["search_web", "rag_search"]))
    assert (many.mode, many.rule) == ("react", "explicit:tools(2)")
    multi_step = route("几点了，天气如何", tools=TOOLS, knowledge_loaded=False, options=RouteOptions(selected_tools=["get_time"]))
    assert multi_step.mode == "react"
    assert route("anything", tools=TOOLS, knowledge_loaded=True, options=RouteOptions(use_rag=True)).mode == "rag"
    assert route("anything", tools=TOOLS, knowledge_loaded=False, options=RouteOptions(use_rag=True)).mode == "chat"
    assert route("anything", tools=TOOLS, knowledge_loaded=True, options=RouteOptions(use_rag=False)).mode == "chat"


def test_forced_tool_mode_offers_the_tools_the_query_needs() -> None:
    weather = route("北京天气怎么样", tools=TOOLS, knowledge_loaded=False, options=RouteOptions(mode="tool"))
    assert (weather.mode, weather.tools) == ("tool", ["get_weather"])
    vague = route("do something", tools=TOOLS, knowledge_loaded=False, options=RouteOptions(mode="tool"))
    assert vague.tools == []
