"""Routing with knowledge-base evidence, rule-mode answers in the query's language, research topics."""

from __future__ import annotations

import pytest

from saber.agent.relevance import KnowledgeEvidence
from saber.agent.render import render_nodes
from saber.agent.router import route
from saber.agent.subagents.research import topic_of
from saber.agent.subagents.review import on_topic
from saber.graph.node import Node, NodeStatus

TOOLS = ["get_time", "get_weather", "search_web", "rag_search"]
LOW = KnowledgeEvidence(best=0.01, threshold=0.03)
HIGH = KnowledgeEvidence(best=0.12, threshold=0.03)


@pytest.mark.parametrize("query", ["hello", "你好", "thanks!", "谢谢", "I live in Tokyo"])
def test_small_talk_is_chat_even_with_a_relevant_looking_knowledge_base(query: str) -> None:
    assert route(query, tools=TOOLS, knowledge_loaded=True, evidence=HIGH).mode == "chat"


def test_the_knowledge_base_needs_relevance_and_the_decision_carries_it() -> None:
    low = route("What is the capital of Australia?", tools=TOOLS, knowledge_loaded=True, evidence=LOW)
    high = route("What is the guest wifi password?", tools=TOOLS, knowledge_loaded=True, evidence=HIGH)
    assert (low.mode, high.mode) == ("chat", "rag")
    assert low.evidence is LOW and "0.010 < threshold 0.030" in low.rule
    assert high.evidence is HIGH and "≥" in high.rule


def test_naming_the_knowledge_base_routes_there_even_when_nothing_is_relevant() -> None:
    for query in ("我的笔记里有没有提到咖啡机？", "Search my documents for the parking policy"):
        decision = route(query, tools=TOOLS, knowledge_loaded=True, evidence=LOW)
        assert decision.mode == "rag" and decision.evidence is LOW


@pytest.mark.parametrize(("query", "rule"), [
    ("What time is it in London and Paris?", "keywords:react(time×2 places)"),
    ("北京和上海的天气", "keywords:react(weather×2 places)"),
])
def test_several_places_are_a_plan(query: str, rule: str) -> None:
    decision = route(query, tools=TOOLS, knowledge_loaded=False)
    assert (decision.mode, decision.rule) == ("react", rule)


def _node(node_id: str, tool: str, params: dict[str, str], *, result: str | None = None, error: str | None = None) -> Node:
    node = Node(id=node_id, tool=tool, params=params)
    node.status = NodeStatus.DONE if error is None else NodeStatus.FAILED
    node.result, node.error = result, error
    return node


TOKYO = ("Current time in Tokyo (东京), Japan: Monday, 2024-01-15 21:00:00 (JST, Asia/Tokyo, UTC+09:00); "
         "ISO 8601: 2024-01-15T21:00:00+09:00")
DOWN = "the weather service (Open-Meteo) could not be reached: network unreachable or connection refused " + "x" * 900


def test_a_chinese_answer_renders_results_in_chinese_and_summarises_failures_once() -> None:
    nodes = [
        _node("n1", "get_time", {"timezone": "东京"}, result=TOKYO),
        _node("n2", "get_weather", {"city": "东京"}, error=DOWN),
        _node("n3", "get_weather", {"city": "纽约"}, error=DOWN),
    ]
    answer = render_nodes(nodes, "zh", query="东京和纽约的时间和天气")
    assert answer.splitlines()[0] == "东京现在是 2024-01-15 星期一 21:00（JST, Asia/Tokyo, UTC+09:00）。"
    assert answer.count("天气服务暂时无法访问") == 1 and "（东京、纽约）" in answer
    assert "Current time" not in answer and "xxxx" not in answer


def test_an_english_answer_says_when_the_preference_or_the_default_was_used() -> None:
    pref = render_nodes([_node("n1", "get_time", {"timezone": "Tokyo"}, result=TOKYO)], "en",
                        query="what time is it now?", preferences={"city": "Tokyo"})
    assert pref.startswith("In Tokyo (东京), Japan it is 21:00 on Monday") and "your preference, Tokyo" in pref
    named = render_nodes([_node("n1", "get_time", {"timezone": "Tokyo"}, result=TOKYO)], "en",
                         query="what time is it in Tokyo?", preferences={"city": "Tokyo"})
    assert "preference" not in named
    shanghai = TOKYO.replace("Tokyo (东京), Japan", "Asia/Shanghai")
    default = render_nodes([_node("n1", "get_time", {"timezone": "Asia/Shanghai"}, result=shanghai)], "en",
                           query="what time is it?", default_timezone="Asia/Shanghai")
    assert "default time zone, Asia/Shanghai" in default


def test_an_unknown_place_is_named_in_the_failure() -> None:
    answer = render_nodes([_node("n1", "get_time", {"timezone": "Atlantis"},
                                 error="get_time: unknown place 'Atlantis': no city, time zone or place by that name")],
                          "en", query="what time is it in Atlantis")
    assert answer == "No such place was found (Atlantis)"


def test_web_search_that_cannot_be_reached_says_so_and_one_that_is_off_says_not_available() -> None:
    down = _node("n1", "search_web", {"query": "x"},
                 error="web search (ddgs: https://html.duckduckgo.com/html) could not be reached: connection refused")
    assert render_nodes([down], "en", query="search the web for x") == "Web search could not be reached (search_web)"
    off = _node("n1", "search_web", {"query": "x"}, error="search_web: no search backend is configured")
    assert render_nodes([off], "en", query="search the web for x") == "Web search is not available (search_web)"


def test_a_place_found_wanting_says_why_not_that_it_was_not_found() -> None:
    error = "get_time: unknown place 'UTC+99': UTC offset out of range (allowed -14:00 to +14:00)"
    node = _node("n1", "get_time", {"timezone": "UTC+99"}, error=error)
    assert render_nodes([node], "en", query="time in UTC+99") == (
        "Not a usable place: UTC offset out of range (allowed -14:00 to +14:00) (UTC+99)")
    assert render_nodes([node], "zh", query="UTC+99 几点").startswith("无法使用这个地点：UTC offset out of range")


@pytest.mark.parametrize(("goal", "topic"), [
    ("调研一下量子计算的最新进展并写成报告", "量子计算的最新进展"),
    ("Research the Rust programming language and write a report", "the Rust programming language"),
    ("请调研一下固态电池技术，并生成一份报告", "固态电池技术"),
    ("写一份关于碳中和政策的报告并保存", "碳中和政策"),
    ("research Kubernetes networking and save it to the knowledge base", "Kubernetes networking"),
    ("帮我调研一下 K8s service 的几种类型", "K8s service 的几种类型"),
    ("研究一下总结方法论", "总结方法论"),
])
def test_research_topics_lose_the_instructions_and_connectives(goal: str, topic: str) -> None:
    assert topic_of(goal) == topic


def test_the_review_notices_findings_about_something_else() -> None:
    assert not on_topic("远程办公利弊", "# 远程办公利弊 调研报告\n员工休假制度：年假 10 天，病假 12 天。")
    assert on_topic("量子计算的最新进展", "# t\n量子计算的纠错进展：逻辑比特……")


def test_a_sub_agent_whose_search_was_unreachable_is_not_called_unreachable() -> None:
    node = Node(id="n1", agent="research_agent", params={"goal": "Research [/] topic"})
    node.status = NodeStatus.FAILED
    node.error = ("research_agent found nothing for '[/] topic': rag_search: nothing relevant in the knowledge base; "
                  "search_web failed (web search (ddgs) could not be reached: timed out)")
    answer = render_nodes([node], "en", query="Research [/] topic and write a report")
    assert answer.startswith("research_agent found nothing for '[/] topic': rag_search: nothing relevant")
    assert "research_agent could not be reached" not in answer
    assert "failed: research_agent" not in answer
