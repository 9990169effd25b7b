from __future__ import annotations

from typing import Any

import pytest

from saber.planner import rule_plan
from saber.planner.rules import search_terms
from saber.tools import Tool, tool


def _noop(args: dict[str, Any]) -> Any:
    raise AssertionError("not executed in planning")


@tool
def get_time(timezone: str = "Asia/Shanghai") -> str:
    """Current time."""
    raise AssertionError


@tool
def get_weather(city: str, days: int = 1) -> str:
    """Weather for a city."""
    raise AssertionError


def _tool(name: str) -> Tool:
    return Tool.from_json_schema(name, name, {"properties": {"query": {"type": "string"}}, "required": ["query"]}, _noop)


TOOLS = {"get_time": get_time, "get_weather": get_weather, "search_web": _tool("search_web"), "rag_search": _tool("rag_search")}
AGENTS = {"research_agent": "r", "writer_agent": "w", "review_agent": "v", "doc_agent": "d"}


def _summary(query: str, **kwargs: Any) -> list[tuple[str, str, dict[str, Any], list[str], str | None]]:
    plan = rule_plan(query, kwargs.pop("tools", TOOLS), agents=kwargs.pop("agents", AGENTS), **kwargs)
    assert plan.format == "rules"
    return [(n.id, n.target, n.params, n.depends_on, n.race_group) for n in plan.nodes]


def test_weather_and_time_in_chinese_takes_the_city_from_the_query() -> None:
    assert _summary("北京天气和现在几点") == [
        ("n1", "get_time", {"timezone": "北京"}, [], None),
        ("n2", "get_weather", {"city": "北京", "days": 1}, [], None),
    ]


def test_english_weather_uses_the_english_city_name() -> None:
    assert _summary("what's the weather in London tomorrow?") == [("n1", "get_weather", {"city": "London", "days": 1}, [], None)]


def test_preferences_fill_city_and_timezone() -> None:
    prefs = {"城市": "杭州", "时区": "Asia/Tokyo"}
    assert _summary("天气怎么样，现在几点", preferences=prefs) == [
        ("n1", "get_time", {"timezone": "Asia/Tokyo"}, [], None),
        ("n2", "get_weather", {"city": "杭州", "days": 1}, [], None),
    ]


@pytest.mark.parametrize(("query", "calls"), [
    ("What time is it in New York and what is the weather in Paris?",
     [("get_time", "New York"), ("get_weather", "Paris")]),
    ("伦敦、巴黎现在几点，纽约天气如何", [("get_time", "伦敦"), ("get_time", "巴黎"), ("get_weather", "纽约")]),
    ("weather in Seoul, time in Dubai", [("get_time", "Dubai"), ("get_weather", "Seoul")]),
    # a clause that names no place asks about the others' places
    ("上海现在几点，那里天气怎么样", [("get_time", "上海"), ("get_weather", "上海")]),
    ("What time is it in Madrid? And the weather there?", [("get_time", "Madrid"), ("get_weather", "Madrid")]),
    # places listed with commas belong to one question
    ("Compare the weather in Tokyo, Osaka and Kyoto", [("get_weather", "Tokyo"), ("get_weather", "Osaka"),
                                                      ("get_weather", "Kyoto")]),
    ("北京，上海的天气和时间", [("get_time", "北京"), ("get_time", "上海"), ("get_weather", "北京"), ("get_weather", "上海")]),
])
def test_each_question_is_about_the_places_of_its_own_clause(query: str, calls: list[tuple[str, str]]) -> None:
    assert [(target, next(iter(params.values()))) for _, target, params, _, _ in _summary(query)] == calls


def test_weather_without_any_city_is_skipped_with_a_warning() -> None:
    plan = rule_plan("天气怎么样", {"get_weather": get_weather}, agents=AGENTS)
    assert plan.nodes == []
    assert any("no city" in w for w in plan.warnings)


def test_city_finder_can_be_injected() -> None:
    assert _summary("weather at home", city_from_query=lambda q: "Reykjavik") == [
        ("n1", "get_weather", {"city": "Reykjavik", "days": 1}, [], None)]


@pytest.mark.parametrize(("query", "terms"), [("搜索一下 K8s service 是什么", "K8s service 是什么"),
                                           ("search what is a k8s service", "what is a k8s service")])
def test_search_races_the_knowledge_base_against_the_web(query: str, terms: str) -> None:
    assert _summary(query) == [
        ("n1", "rag_search", {"query": query}, [], "search"),
        ("n2", "search_web", {"query": terms}, [], "search"),
    ]


def test_search_alone_does_not_race() -> None:
    tools = {"search_web": TOOLS["search_web"]}
    assert _summary("如何学习 Rust", tools=tools) == [("n1", "search_web", {"query": "如何学习 Rust"}, [], None)]


def test_a_question_matching_no_rule_asks_the_knowledge_base_only_when_it_exists() -> None:
    assert _summary("我们的报销上限") == [("n1", "rag_search", {"query": "我们的报销上限"}, [], None)]
    assert _summary("hello", tools={"get_time": get_time}) == []


def test_time_only_query_does_not_touch_the_knowledge_base() -> None:
    assert [t for _, t, *_ in _summary("现在几点了")] == ["get_time"]


@pytest.mark.parametrize(("query", "zone"), [("东京现在几点", "东京"), ("what time is it in New York", "New York")])
def test_time_takes_the_city_from_the_query(query: str, zone: str) -> None:
    assert _summary(query) == [("n1", "get_time", {"timezone": zone}, [], None)]


def test_time_falls_back_to_the_preferred_city() -> None:
    assert _summary("现在几点", preferences={"city": "Tokyo"}) == [("n1", "get_time", {"timezone": "Tokyo"}, [], None)]


def test_how_is_the_weather_is_not_a_search() -> None:
    assert [t for _, t, *_ in _summary("北京天气怎么样")] == ["get_weather"]
    assert [t for _, t, *_ in _summary("现在几点，北京天气如何")] == ["get_time", "get_weather"]


def test_research_pipeline_with_save_adds_the_doc_agent() -> None:
    query = "帮我调研一下 K8s service 的几种类型，写成报告保存"
    assert _summary(query) == [
        ("n1", "research_agent", {}, [], None),
        ("n2", "writer_agent", {}, ["n1"], None),
        ("n3", "review_agent", {}, ["n2"], None),
        ("n4", "doc_agent", {}, ["n2", "n3"], None),
    ]


def test_research_pipeline_without_save_or_review() -> None:
    agents = {"research_agent": "r", "writer_agent": "w", "doc_agent": "d"}
    plan = rule_plan("Research the history of Unicode and write a report", TOOLS, agents=agents)
    assert [(n.agent, n.depends_on, n.goal) for n in plan.nodes] == [
        ("research_agent", [], "Research the history of Unicode and write a report"),
        ("writer_agent", ["n1"], "Research the history of Unicode and write a report"),
    ]


@pytest.mark.parametrize(("query", "calls", "goal", "topic"), [
    ("东京几点，然后写一份关于东京的报告", [("get_time", {"timezone": "东京"})], "写一份关于东京的报告", "东京"),
    ("What time is it in Tokyo and Paris, then write a report about Tokyo",
     [("get_time", {"timezone": "Tokyo"}), ("get_time", {"timezone": "Paris"})], "write a report about Tokyo", "Tokyo"),
    ("北京天气怎么样？调研一下北京的旅游景点并写成报告", [("get_weather", {"city": "北京", "days": 1})],
     "调研一下北京的旅游景点并写成报告", "北京的旅游景点"),
])
def test_a_time_or_weather_question_beside_a_research_request_is_its_own_step_for_the_writer(
        query: str, calls: list[tuple[str, dict[str, str]]], goal: str, topic: str) -> None:
    from saber.agent.subagents.research import topic_of

    nodes = rule_plan(query, TOOLS, agents=AGENTS).nodes
    research, *tools, writer, review = nodes
    assert (research.agent, research.goal, research.depends_on) == ("research_agent", goal, [])
    assert topic_of(research.goal) == topic
    assert [(n.tool, n.params, n.depends_on) for n in tools] == [(name, params, []) for name, params in calls]
    assert (writer.agent, writer.depends_on) == ("writer_agent", [research.id] + [n.id for n in tools])
    assert (review.agent, review.depends_on) == ("review_agent", [writer.id])


def test_a_research_request_about_the_weather_stays_one_research_step() -> None:
    query = "调研一下北京的天气变化并写成报告"
    assert [(n.agent or n.tool, n.goal) for n in rule_plan(query, TOOLS, agents=AGENTS).nodes][:2] == [
        ("research_agent", query), ("writer_agent", query)]


def test_research_words_without_the_agents_fall_back_to_tools() -> None:
    assert [t for _, t, *_ in _summary("调研一下最新的 AI 新闻", agents={})] == ["rag_search", "search_web"]


@pytest.mark.parametrize(("query", "terms"), [
    ("search the web for the latest Python release", "the latest Python release"),
    ("look up news about SpaceX", "news about SpaceX"),
    ("google the best hiking trails", "the best hiking trails"),
    ("Can you search online for cheap flights to Osaka?", "cheap flights to Osaka"),
    ("please find information about the Rust borrow checker", "the Rust borrow checker"),
    ("search rust async runtimes", "rust async runtimes"),
    ("search engine optimization tips", "search engine optimization tips"),
    ("latest news on Kubernetes 1.31", "latest news on Kubernetes 1.31"),
    ("what is a monad?", "what is a monad"),
    ("look up news about Paris and tell me the time there", "news about Paris"),
    ("news about Paris and Rome", "news about Paris and Rome"),
    ("搜索一下最新的 AI 新闻", "最新的 AI 新闻"),
    ("帮我查一下 Rust 1.80 的新特性", "Rust 1.80 的新特性"),
    ("查一下今天的新闻。", "今天的新闻"),
    ("请在网上搜索关于固态电池的资料", "固态电池的资料"),
    ("搜索一下东京的新闻，再告诉我东京现在几点", "东京的新闻"),
    ("东京现在几点，顺便搜一下东京的新闻", "东京的新闻"),
    ("查理·芒格是谁", "查理·芒格是谁"),
    ("search", "search"),
    ("搜索一下", "搜索一下"),
])
def test_search_terms_drop_the_request_around_them(query: str, terms: str) -> None:
    assert search_terms(query) == terms


def test_the_rule_planner_searches_the_terms_not_the_request() -> None:
    plan = rule_plan("搜索一下东京的新闻，再告诉我东京现在几点", TOOLS)
    assert [(n.tool, n.params) for n in plan.nodes if n.tool == "search_web"] == [("search_web", {"query": "东京的新闻"})]
