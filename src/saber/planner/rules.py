"""The rule planner: a plan from keywords when there is no model or nothing parses.

The keywords live in ``saber.lexical.keywords`` (shared with the router). Rules:

- a research request (调研, 研究, research; or a report/document/plan to write, generate or save)
  with the research and writer agents available → research_agent → writer_agent →
  review_agent (when present) → doc_agent, the last only when the query asks to save (保存, 落库,
  写入, 文档库, 知识库, save …); doc_agent depends on the writer (whose report it saves) and the review;
  a clause beside the request that asks the time or the weather is its own step, for the writer;
- a given time of day converted between places ("把北京时间下午3点换算成伦敦时间", "convert 3 pm
  Beijing time to London") → one convert_time (``tools.builtin.conversion``);
- time words → one get_time per place or time zone the query names (all in parallel), else one for
  the preferred timezone or city, else one with the tool's default zone;
- weather words → one get_weather per place the query names (time zones excluded), else the
  preferred city; skipped with a warning when the tool needs a city and none is known;
- search words → search_web with the search terms (``search_terms``: "search the web for X, then
  tell me the time" searches X); open questions (是什么, what is …) too, when no other rule matched;
  rag_search joins it (race group "search" when both exist), and is also used for
  knowledge-base words or when no other rule matched — not for every query as the original
  did, so "几点了" does not race a knowledge-base lookup against nothing.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any

from saber.graph.node import Node
from saber.language import has_han
from saber.lexical import keywords as kw
from saber.plaintext import plain_line
from saber.planner.result import ParsedPlan
from saber.planner.validate import validate_nodes
from saber.tools.base import Tool

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
PlaceFinder = Callable[[str], list[str]]


def rule_plan(
    query: str,
    tools: Mapping[str, Tool],
    *,
    agents: Mapping[str, str] | None = None,
    preferences: Mapping[str, Any] | None = None,
    city_from_query: CityFinder | None = None,
) -> ParsedPlan:
    """A plan from keywords; ``format`` is "rules". An empty plan means no rule matched."""
    warnings: list[str] = []
    agents = agents or {}
    prefs = dict(preferences or {})
    raw = _pipeline(query, agents, tools, prefs, _place_finder(city_from_query), warnings)
    if not raw:
        raw = _tool_rules(query, tools, prefs, _place_finder(city_from_query), warnings)
    checked = validate_nodes(raw, tools, agents=agents, placeholders=False)  # the query is text, never a reference
    return ParsedPlan(nodes=checked.nodes, format="rules", shape="rules", warnings=warnings + checked.warnings)


_CLAUSE = re.compile(r"[，,；;。！!？?\n]+")
_CONNECTOR = re.compile(r"^(?:(?:然后|接着|之后|再|并且?|同时|另外|最后|and\s+then|and|then|also|finally)\s*)+",
                        re.IGNORECASE)


def _pipeline(query: str, agents: Mapping[str, str], tools: Mapping[str, Tool], prefs: dict[str, Any],
              find_places: PlaceFinder, warnings: list[str]) -> list[dict[str, Any]]:
    """research → writer → (review) → (doc); doc depends on the writer (its report) and the review.

    A clause beside the research request that asks the time or the weather ("东京几点，然后写一份
    关于东京的报告") is its own tool call, run beside the research and given to the writer; the
    research then works on its own clause (its topic "东京", not "东京几点")."""
    if not kw.is_research_request(query) or "research_agent" not in agents or "writer_agent" not in agents:
        return []
    asides: list[list[tuple[str, dict[str, Any]]]] = []
    goal = query
    clauses = [c.strip() for c in _CLAUSE.split(query) if c.strip()]
    if any(kw.is_research_request(c) for c in clauses):  # else the request spans the clauses: keep it whole
        for clause in clauses:
            calls = [] if kw.is_research_request(clause) else place_calls(
                _CONNECTOR.sub("", clause), tools, prefs, find_places=find_places, warnings=warnings)
            if calls:
                asides.append(calls)
                goal = re.sub(re.escape(clause) + r"[，,；;。！!？?\s]*", "", goal, count=1)
        goal = _CONNECTOR.sub("", goal.strip(" ，,；;。")) or query
    goal = plain_line(goal) or goal  # the node's title and the research topic: "**Oslo**" is "Oslo"
    raw: list[dict[str, Any]] = []

    def stage(agent: str, depends_on: list[str]) -> str:
        node_id = f"n{len(raw) + 1}"
        raw.append({"id": node_id, "type": "sub_agent", "agent": agent, "goal": goal, "params": {}, "depends_on": depends_on})
        return node_id

    found = [stage("research_agent", [])]
    for name, params in (call for calls in asides for call in calls):
        found.append(f"n{len(raw) + 1}")
        raw.append({"id": found[-1], "tool": name, "params": params, "depends_on": []})
    writer = stage("writer_agent", found)
    last = [writer]
    if "review_agent" in agents:
        last = [writer, stage("review_agent", [writer])]
    if "doc_agent" in agents and kw.SAVE.search(query):
        stage("doc_agent", last)
    return raw


def _place_finder(city_from_query: CityFinder | None) -> PlaceFinder:
    if city_from_query is None:
        from saber.tools.builtin.mentions import place_mentions

        return place_mentions

    def one(query: str) -> list[str]:
        city = city_from_query(query)
        return [city] if city else []

    return one


def _tool_rules(query: str, tools: Mapping[str, Tool], prefs: dict[str, Any],
                find_places: PlaceFinder, warnings: list[str]) -> list[dict[str, Any]]:
    raw: list[dict[str, Any]] = []

    def add(name: str, params: dict[str, Any], race_group: str | None = None) -> None:
        raw.append({"id": f"n{len(raw) + 1}", "tool": name, "params": params, "race_group": race_group})

    for name, params in place_calls(query, tools, prefs, find_places=find_places, warnings=warnings):
        add(name, params)
    searching = bool(kw.SEARCH.search(query) or (not raw and kw.QUESTION.search(query)))
    wants_kb = "rag_search" in tools and (searching or bool(kw.KNOWLEDGE.search(query)) or not raw)
    racing = "search" if wants_kb and searching and "search_web" in tools else None
    if wants_kb:
        add("rag_search", {_query_param(tools["rag_search"]): query}, racing)
    if searching and "search_web" in tools:
        add("search_web", {_query_param(tools["search_web"]): search_terms(query)}, racing)
    return raw


@functools.cache
def _clause_boundary() -> re.Pattern[str]:
    """Where one request of a query ends: punctuation, or "and/then" before a new request."""
    return re.compile(r"[，,；;。！!？?\n]+|\s+(?:and\s+then|and|then)\s+(?=(?:tell|give|show|let|also|what|how)\b)",
                      re.IGNORECASE)


@functools.cache
def _search_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(clause boundary, leading request): compiled on the first search, not at import."""
    clauses = _clause_boundary()
    english = (r"(?:(?:do|run)\s+an?\s+)?(?:(?:web|internet|online)\s+)?search\b(?!\s+(?:engines?|results?|bars?|terms?)\b)"
               r"(?:\s+(?:the\s+web|the\s+internet|online|google)\b)?(?:\s+(?:for|about|on)\b)?"
               r"|look\s*up\b|google\b|find\b(?:\s+me\b)?(?:\s+some\b)?(?:\s+(?:information|info|details)\b)?"
               r"(?:\s+(?:about|on)\b)?")
    chinese = (r"(?:在网上|上网|网上)?(?:搜索一下|搜一下|搜一搜|搜索|搜搜|查一下|查一查|查查|查询一下|查询|查找"
               r"|(?<=帮我)查|(?<=请)查|(?<=帮忙)查)(?:一下)?(?:关于)?")
    fillers = r"(?:(?:please|pls|can\s+you|could\s+you|would\s+you|help\s+me|and|also|then)\s+|(?:请|帮我|帮忙|麻烦你?|能不能|能否|可以|再|然后|顺便|另外|并且?)\s*)*"
    lead = re.compile(rf"^{fillers}(?:{english}|{chinese})\s*", re.IGNORECASE)
    return clauses, lead


def search_terms(query: str) -> str:
    """What to search for: the clause that asks to search (the first one when none does), without
    the request around it ("search the web for the latest Python release" → "the latest Python
    release", "搜索一下东京的新闻，再告诉我东京现在几点" → "东京的新闻"). The query itself when
    nothing would be left."""
    clauses, lead = _search_patterns()
    parts = [p.strip() for p in clauses.split(query) if p and p.strip()]
    clause = next((p for p in parts if kw.SEARCH.search(p)), parts[0] if parts else query)
    terms = lead.sub("", clause, count=1).strip(" \t，,。.!！?？")
    return terms or query.strip()


def place_calls(query: str, tools: Mapping[str, Tool], preferences: Mapping[str, Any] | None = None, *,
                find_places: PlaceFinder | None = None, warnings: list[str] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """(tool, params) for every place the query asks the time or the weather of, in query order.

    "东京和纽约现在几点" is two get_time calls; "北京和上海的天气" two get_weather calls; a query that
    names no place gets one call for the user's preferred city or zone (or the tool's default
    zone for the time). This is the public entry for adding the calls a model's plan missed.
    """
    from saber.tools.builtin.mentions import is_zone_form, place_mentions

    prefs = dict(preferences or {})
    warnings = warnings if warnings is not None else []
    time_places, weather_places = _places_asked(query, find_places or place_mentions)
    calls: list[tuple[str, dict[str, Any]]] = []
    conversion, clocks = _conversion(query) if "convert_time" in tools else (None, [])
    if conversion is not None:
        calls.append(("convert_time", conversion))
        param = _place_param(tools["get_time"], ("timezone", "tz", "city", "location")) if "get_time" in tools else None
        calls += [("get_time", {param: place}) for place in clocks if param is not None]
    elif kw.TIME.search(query) and "get_time" in tools:
        param = _place_param(tools["get_time"], ("timezone", "tz", "city", "location"))
        if param is None:
            calls.append(("get_time", {}))
        elif time_places:
            calls += [("get_time", {param: place}) for place in time_places]
        else:
            calls.append(("get_time", _time_params(tools["get_time"], None, prefs)))
    if kw.WEATHER.search(query) and "get_weather" in tools:
        weather = tools["get_weather"]
        param = _place_param(weather, ("city", "location")) or "city"
        cities = [p for p in weather_places if not is_zone_form(p)]
        if cities:
            calls += [("get_weather", {param: city}) for city in cities]
        else:
            params = fill_from_preferences(weather, {}, prefs)
            if param in params or param not in weather.schema.get("required", []):
                calls.append(("get_weather", params))
            else:
                warnings.append("get_weather skipped: no city in the query and no preferred city")
    return calls


def _conversion(query: str) -> tuple[dict[str, Any] | None, list[str]]:
    """``convert_time``'s arguments when the query converts a given time between places, and the
    places whose current time another sentence of it asks."""
    from saber.tools.builtin.conversion import conversion_request, other_clocks

    found = conversion_request(query)
    return (found.params(), other_clocks(query, found)) if found is not None else (None, [])


def _places_asked(query: str, find_places: PlaceFinder) -> tuple[list[str], list[str]]:
    """(places asked the time of, places asked the weather of).

    Each question is about the places of its own clause ("What time is it in New York and what is
    the weather in Paris?" asks the time of New York only); a clause that names no place asks
    about the query's places ("上海现在几点，那里天气怎么样"). When a clause names places but asks
    neither ("北京，上海，广州的天气", "the weather in Tokyo, Osaka and Kyoto"), the commas list
    places of one question, and every question is about every place."""
    places = find_places(query)
    parts = [p for p in _clause_boundary().split(query) if p and p.strip()]
    if len(parts) < 2 or not places:
        return places, places
    found = [(part, find_places(part)) for part in parts]
    if any(named and not (kw.TIME.search(part) or kw.WEATHER.search(part)) for part, named in found):
        return places, places

    def asked(kind: re.Pattern[str]) -> list[str]:
        mine = [place for part, named in found if kind.search(part) for place in named]
        return list(dict.fromkeys(mine)) or places

    return asked(kw.TIME), asked(kw.WEATHER)


def _place_param(tool: Tool, names: tuple[str, ...]) -> str | None:
    props = tool.schema.get("properties", {})
    return next((p for p in names if p in props), None)


def _time_params(tool: Tool, city: str | None, prefs: Mapping[str, Any]) -> dict[str, Any]:
    """The zone for get_time: a city named in the query (get_time reads city names), else the
    preferred timezone, else the preferred city."""
    props = tool.schema.get("properties", {})
    param = next((p for p in ("timezone", "tz", "city", "location") if p in props), None)
    if param is None:
        return {}
    if city:
        return {param: city}
    params = fill_from_preferences(tool, {}, prefs)
    if param not in params:
        home = next((prefs[k] for k in ("city", "城市", "location") if prefs.get(k)), None)
        if home:
            params[param] = home
    return params


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


def default_city_finder() -> CityFinder:
    """``saber.cities.find_city``, answering in the query's script."""
    from saber.cities import find_city

    def finder(text: str) -> str | None:
        city = find_city(text)
        if city is None:
            return None
        return (city.name_zh or city.name) if has_han(text) else city.name

    return finder


def rule_nodes(query: str, tools: Mapping[str, Tool], **kwargs: Any) -> list[Node]:
    """Just the nodes of ``rule_plan``."""
    return rule_plan(query, tools, **kwargs).nodes
