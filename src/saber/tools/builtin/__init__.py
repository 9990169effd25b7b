"""Built-in tools with real backends: ``get_time`` and ``convert_time`` (zoneinfo), ``get_weather``
(Open-Meteo) and ``search_web`` (Tavily, SearXNG or ddgs: DuckDuckGo and the engines it falls back on)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from saber.cities import CITIES, City, city_names, find_city, lookup_city
from saber.tools.base import Tool
from saber.tools.builtin.clock import make_time_tool, resolve_timezone
from saber.tools.builtin.places import Place, PlaceResolver, UnknownPlaceError
from saber.tools.builtin.search import make_search_tool
from saber.tools.builtin.timeconvert import make_convert_time_tool
from saber.tools.builtin.weather import make_weather_tool

if TYPE_CHECKING:
    from saber.config import Settings

__all__ = [
    "CITIES",
    "City",
    "Place",
    "PlaceResolver",
    "UnknownPlaceError",
    "builtin_tools",
    "city_names",
    "find_city",
    "lookup_city",
    "make_convert_time_tool",
    "make_search_tool",
    "make_time_tool",
    "make_weather_tool",
    "resolve_timezone",
]


def builtin_tools(settings: Settings) -> list[Tool]:
    """``get_time``, ``convert_time``, ``get_weather`` and ``search_web`` configured from ``settings``.

    The time and weather tools share one place resolver (and its cache), which geocodes through
    ``weather_geocoding_url``."""
    resolver = PlaceResolver(geocoding_url=settings.weather.geocoding_url, timeout=settings.tools.timeout)
    return [
        make_time_tool(default_timezone=settings.tools.default_timezone, resolver=resolver),
        make_convert_time_tool(resolver=resolver),
        make_weather_tool(
            geocoding_url=settings.weather.geocoding_url,
            forecast_url=settings.weather.forecast_url,
            timeout=settings.tools.timeout,
            resolver=resolver,
        ),
        make_search_tool(
            settings.search.backend,
            tavily_api_key=settings.search.tavily_api_key,
            searxng_url=settings.search.searxng_url,
            timeout=settings.tools.timeout,
        ),
    ]
