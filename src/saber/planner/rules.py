"""The rule planner: a plan from keywords when there is no model or nothing parses.

Rules (Chinese and English, lower-cased substring match):

- research / report words (研究, 调研, 报告, 方案, 分析, research, report …) with the research and
  writer agents available → research_agent → writer_agent → review_agent (when present) →
  doc_agent, the last only when the query asks to save (保存, 落库, 写入, 文档库, 知识库, save …);
- time words → get_time (timezone from preferences);
- weather words → get_weather, the city found in the query, else the preferred city; skipped
  with a warning when the tool needs a city and none is known;
- search words → search_web; rag_search joins it (race group "search" when both exist), and is
  also used for knowledge-base words or when no other rule matched — not for every query as the
  original did, so "几点了" does not race a knowledge-base lookup against nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from saber.graph.node import Node
from saber.planner.result import ParsedPlan
from saber.planner.validate import validate_nodes
from saber.tools.base import Tool

TIME_WORDS = ("时间", "几点", "现在", "日期", "what time", "time is it", "current time", "time in", "date today", "today's date")
WEATHER_WORDS = ("天气", "气温", "下雨", "下雪", "温度", "weather", "temperature", "forecast", "rain", "snow")
SEARCH_WORDS = ("搜索", "查询", "查一下", "查查", "介绍", "是什么", "是谁", "怎么", "如何", "为什么", "最新", "新闻",
                "search", "look up", "lookup", "find ", "what is", "what are", "who is", "how to", "how do", "why ", "latest", "news")
KB_WORDS = ("知识库", "文档库", "我的文档", "资料", "笔记", "knowledge base", "my documents", "my notes", "my files")
RESEARCH_WORDS = ("研究", "调研", "总结", "报告", "方案", "分析", "research", "investigate", "report", "analyse", "analyze", "analysis", "white paper")
SAVE_WORDS = ("保存", "落库", "写入", "文档库", "知识库", "存档", "save", "store it", "archive", "knowledge base")

PREFERENCE_KEYS: dict[str, tuple[str, ...]] = {
    "city": ("城市", "city", "location"),
    "location": ("城市", "city", "location"),
    "timezone": ("时区", "timezone", "tz"),
    "tz": ("时区", "timezone", "tz"),
    "name": ("姓名", "name"),
    "language": ("语言", "language"),
    "country": ("国家", "country"),
}
"""A tool parameter → the preference keys that can fill it (ORIGINAL.md's mapping)."""

CityFinder = Callable[[str], str | None]


def rule_plan(
    query: str,
    tools: Mapping[str, Tool],
    *,
    agents: Mapping[str, str] | None = None,
    preferences: Mapping[str, Any] | None = None,
    city_from_query: CityFinder | None = None,
) -> ParsedPlan:
    """A plan from keywords; ``format`` is "rules". An empty plan means no rule matched."""
    q = query.lower()
    warnings: list[str] = []
    agents = agents or {}
    prefs = dict(preferences or {})
    raw = _pipeline(query, q, agents)
    if not raw:
        raw = _tool_rules(query, q, tools, prefs, city_from_query or default_city_finder(), warnings)
    checked = validate_nodes(raw, tools, agents=agents)
    return ParsedPlan(nodes=checked.nodes, format="rules", shape="rules", warnings=warnings + checked.warnings)


def _has(q: str, words: tuple[str, ...]) -> bool:
    return any(w in q for w in words)


def _pipeline(query: str, q: str, agents: Mapping[str, str]) -> list[dict[str, Any]]:
    if not _has(q, RESEARCH_WORDS) or "research_agent" not in agents or "writer_agent" not in agents:
        return []
    stages = ["research_agent", "writer_agent"]
    if "review_agent" in agents:
        stages.append("review_agent")
    if "doc_agent" in agents and _has(q, SAVE_WORDS):
        stages.append("doc_agent")
    return [
        {"id": f"n{i}", "type": "sub_agent", "agent": name, "goal": query, "params": {},
         "depends_on": [f"n{i - 1}"] if i > 1 else []}
        for i, name in enumerate(stages, start=1)
    ]


def _tool_rules(query: str, q: str, tools: Mapping[str, Tool], prefs: dict[str, Any],
                find_city: CityFinder, warnings: list[str]) -> list[dict[str, Any]]:
    raw: list[dict[str, Any]] = []

    def add(name: str, params: dict[str, Any], race_group: str | None = None) -> None:
        raw.append({"id": f"n{len(raw) + 1}", "tool": name, "params": params, "race_group": race_group})

    if _has(q, TIME_WORDS) and "get_time" in tools:
        add("get_time", fill_from_preferences(tools["get_time"], {}, prefs))
    if _has(q, WEATHER_WORDS) and "get_weather" in tools:
        weather = tools["get_weather"]
        city_param = next((p for p in ("city", "location") if p in weather.schema.get("properties", {})), "city")
        city = find_city(query)
        params = fill_from_preferences(weather, {city_param: city} if city else {}, prefs)
        if city_param in params or city_param not in weather.schema.get("required", []):
            add("get_weather", params)
        else:
            warnings.append("get_weather skipped: no city in the query and no preferred city")
    searching = _has(q.replace("怎么样", ""), SEARCH_WORDS)  # "天气怎么样" asks about weather, not how-to
    wants_kb = "rag_search" in tools and (searching or _has(q, KB_WORDS) or not raw)
    racing = "search" if wants_kb and searching and "search_web" in tools else None
    if wants_kb:
        add("rag_search", {_query_param(tools["rag_search"]): query}, racing)
    if searching and "search_web" in tools:
        add("search_web", {_query_param(tools["search_web"]): query}, racing)
    return raw


def _query_param(tool: Tool) -> str:
    props = tool.schema.get("properties", {})
    return next((p for p in ("query", "q", "question", "keywords") if p in props), "query")


def fill_from_preferences(tool: Tool, params: dict[str, Any], preferences: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` plus values from the user's preferences for the tool's parameters left empty."""
    out = dict(params)
    for name in tool.schema.get("properties", {}):
        if out.get(name) not in (None, ""):
            continue
        for key in PREFERENCE_KEYS.get(name, ()):
            value = preferences.get(key)
            if value not in (None, ""):
                out[name] = value
                break
    return out


_FALLBACK_CITIES = {
    "北京": "北京", "上海": "上海", "广州": "广州", "深圳": "深圳", "杭州": "杭州", "成都": "成都",
    "beijing": "Beijing", "shanghai": "Shanghai", "london": "London", "new york": "New York",
    "tokyo": "Tokyo", "paris": "Paris",
}


def default_city_finder() -> CityFinder:
    """``saber.tools.builtin.cities.find_city`` (names in the query's script), or a tiny list."""
    try:
        from saber.tools.builtin.cities import find_city
    except ImportError:  # pragma: no cover - the built-in tools ship with saber
        def fallback(text: str) -> str | None:
            low = text.lower()
            hits = [(low.find(k), v) for k, v in _FALLBACK_CITIES.items() if k in low]
            return min(hits)[1] if hits else None

        return fallback

    def finder(text: str) -> str | None:
        city = find_city(text)
        if city is None:
            return None
        cjk = any("\u4e00" <= ch <= "\u9fff" for ch in text)
        return (city.name_zh or city.name) if cjk else city.name

    return finder


def rule_nodes(query: str, tools: Mapping[str, Tool], **kwargs: Any) -> list[Node]:
    """Just the nodes of ``rule_plan``."""
    return rule_plan(query, tools, **kwargs).nodes
