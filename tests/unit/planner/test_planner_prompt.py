from __future__ import annotations

import json
from typing import Any

import saber.planner
from saber.llm import Message
from saber.planner import (
    build_planner_prompt,
    detect_language,
    parse_plan,
    plan_json_schema,
    plan_response_format,
)
from saber.tools import Tool, tool


@tool
def get_weather(city: str, days: int = 1) -> str:
    """Weather forecast for a city.

    Args:
        city: City name.
        days: How many days.
    """
    raise AssertionError


def _noop(args: dict[str, Any]) -> Any:
    raise AssertionError


SEARCH = Tool.from_json_schema("search_web", "Search the web.", {"properties": {"query": {"type": "string"}}, "required": ["query"]}, _noop)
TOOLS = {"get_weather": get_weather, "search_web": SEARCH}
AGENTS = {"research_agent": "Researches a topic."}


def test_language_detection() -> None:
    assert detect_language("北京天气和时间") == "zh"
    assert detect_language("帮我查一下 Kubernetes service 的类型") == "zh"
    assert detect_language("What's the weather in 北京?") == "en"
    assert detect_language("weather in Paris") == "en"


def test_chinese_prompt_lists_tools_agents_rules_example_and_context() -> None:
    history = [Message.user("我住在杭州"), Message.assistant("好的，记住了。"), Message.system("ignored")]
    system, user = build_planner_prompt("明天天气怎么样", TOOLS, agents=AGENTS,
                                        preferences={"城市": "杭州", "时区": ""}, history=history)
    assert system.role == "system" and user.role == "user"
    assert "- get_weather(city, days=1): Weather forecast for a city." in system.content
    assert "- research_agent: Researches a topic." in system.content
    for words in ("depends_on", "race_group", "输出 []", "只输出 JSON", "n1", "$n1"):
        assert words in system.content
    assert "城市: 杭州" in user.content and "时区" not in user.content
    assert "user: 我住在杭州" in user.content and "ignored" not in user.content
    assert user.content.rstrip().endswith("请输出 JSON 计划：")


def test_english_prompt_and_its_example_parses_as_a_plan() -> None:
    system, user = build_planner_prompt("weather in Paris and who won the match", TOOLS)
    assert "Output JSON only" in system.content and "Request: weather in Paris" in user.content
    assert "Sub-agents" not in system.content  # none offered: no section
    example = system.content.split("Example", 1)[1].split("\n", 1)[1]
    tools = {**TOOLS, "rag_search": Tool.from_json_schema("rag_search", "KB", SEARCH.schema, _noop)}
    parsed = parse_plan(example, tools)
    assert [n.tool for n in parsed.nodes] == ["get_weather", "search_web", "rag_search"]


def test_schema_enumerates_names_and_its_output_parses() -> None:
    schema = plan_json_schema(TOOLS, AGENTS)
    node = schema["properties"]["plan"]["items"]
    assert node["properties"]["tool"]["enum"] == ["get_weather", "search_web", None]
    assert node["properties"]["agent"]["enum"] == ["research_agent", None]
    fmt = plan_response_format(TOOLS, AGENTS)
    assert fmt.name == "task_plan" and fmt.schema == schema and not fmt.strict
    answer = {"plan": [{"id": "n1", "type": "tool", "tool": "get_weather", "params": {"city": "Rome"}, "depends_on": []}]}
    parsed = parse_plan(json.dumps(answer), TOOLS)
    assert parsed.format == "wrapped" and parsed.nodes[0].params == {"city": "Rome", "days": 1}


def test_public_api() -> None:
    for name in ("parse_plan", "PlanParseError", "ParsedPlan", "build_planner_prompt", "rule_plan", "replan",
                 "ReplanBudget", "substitute_placeholders", "plan_response_format"):
        assert name in saber.planner.__all__
        assert hasattr(saber.planner, name)
