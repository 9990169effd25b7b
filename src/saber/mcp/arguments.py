"""Arguments for a tool nobody at Saber wrote, from the query and the user's preferences.

Tool mode calls one tool without asking a model for its arguments. The built-ins have rules of
their own (``saber.planner.rules``); an MCP tool gets these, which go by parameter names: a
timezone from a city named in the query ("现在东京几点" → ``Asia/Tokyo``), else the preferred
timezone or city, else the default timezone; a city or location from the query or the
preferences; a query-like parameter gets the query. When a required parameter stays empty the
answer is None and the router falls back to planning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from saber.cities import City, find_city, lookup_city
from saber.language import has_han
from saber.tools.base import Tool

_TIMEZONE = ("timezone", "time_zone", "tz", "zone", "iana_timezone", "local_timezone")
_PLACE = ("city", "location", "place", "city_name", "location_name")
_TEXT = ("query", "q", "question", "text", "keywords", "keyword", "search", "prompt", "input", "topic")


def rule_arguments(query: str, tool: Tool, preferences: Mapping[str, Any] | None = None, *,
                   default_timezone: str | None = None) -> dict[str, Any] | None:
    """The arguments the rules can give ``tool`` for ``query``, or None when a required one is unknown."""
    prefs = dict(preferences or {})
    props: dict[str, Any] = tool.schema.get("properties", {})
    required = set(tool.schema.get("required", []))
    city = find_city(query)
    out: dict[str, Any] = {}
    for name, prop in props.items():
        if not _takes_string(prop):
            continue
        key = name.lower()
        value: str | None = None
        if key in _TIMEZONE or key.endswith("_timezone"):
            value = _zone(city, prefs, default_timezone) if key in _TIMEZONE or name in required else None
        elif key in _PLACE:
            value = _place(city, query, prefs)
        elif key in _TEXT:
            value = query
        if value:
            out[name] = value
    if required - set(out):
        return None
    return out


def _takes_string(prop: Any) -> bool:
    kind = prop.get("type") if isinstance(prop, Mapping) else None
    return kind in (None, "string") or (isinstance(kind, list) and "string" in kind)


def _zone(city: City | None, prefs: Mapping[str, Any], default: str | None) -> str | None:
    if city is not None:
        return city.timezone
    for key in ("timezone", "时区", "tz"):
        if prefs.get(key):
            return str(prefs[key])
    for key in ("city", "城市", "location"):
        home = lookup_city(str(prefs[key])) if prefs.get(key) else None
        if home is not None:
            return home.timezone
    return default


def _place(city: City | None, query: str, prefs: Mapping[str, Any]) -> str | None:
    if city is not None:
        return (city.name_zh or city.name) if has_han(query) else city.name
    for key in ("city", "城市", "location"):
        if prefs.get(key):
            return str(prefs[key])
    return None
