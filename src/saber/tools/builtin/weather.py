"""``get_weather``: current weather from Open-Meteo (geocoding, then the forecast API; no key).

Places are resolved by ``places.PlaceResolver``: known cities (see ``cities``) skip the geocoding
round trip, which also maps Chinese names; the rest are geocoded (and cached).
Every failure is a ToolError: unreachable service, timeout and 5xx are retryable, 4xx and an
unknown city are not. Nothing is ever made up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ValidationError

from saber.tools.base import Tool, tool
from saber.tools.builtin._http import make_client, request_json
from saber.tools.builtin.places import DEFAULT_GEOCODING_URL, Place, PlaceResolver, UnknownPlaceError
from saber.tools.errors import ToolArgumentError, ToolError

if TYPE_CHECKING:
    import httpx

DEFAULT_FORECAST_URL = "https://api.open-meteo.com/v1/forecast"
CURRENT_FIELDS = "temperature_2m,relative_humidity_2m,apparent_temperature,weather_code,wind_speed_10m"
_SERVICE = "weather service (Open-Meteo)"

WMO_CODES: dict[int, str] = {
    0: "clear sky", 1: "mainly clear", 2: "partly cloudy", 3: "overcast",
    45: "fog", 48: "depositing rime fog",
    51: "light drizzle", 53: "moderate drizzle", 55: "dense drizzle",
    56: "light freezing drizzle", 57: "dense freezing drizzle",
    61: "slight rain", 63: "moderate rain", 65: "heavy rain",
    66: "light freezing rain", 67: "heavy freezing rain",
    71: "slight snowfall", 73: "moderate snowfall", 75: "heavy snowfall", 77: "snow grains",
    80: "slight rain showers", 81: "moderate rain showers", 82: "violent rain showers",
    85: "slight snow showers", 86: "heavy snow showers",
    95: "thunderstorm", 96: "thunderstorm with slight hail", 99: "thunderstorm with heavy hail",
}
"""WMO weather interpretation codes, as documented by Open-Meteo."""


def describe_weather_code(code: int | None) -> str:
    if code is None:
        return "conditions not reported"
    return WMO_CODES.get(code, f"weather code {code}")


class _Current(BaseModel):
    time: str | None = None
    temperature_2m: float | None = None
    relative_humidity_2m: float | None = None
    apparent_temperature: float | None = None
    weather_code: int | None = None
    wind_speed_10m: float | None = None


class _Forecast(BaseModel):
    current: _Current
    current_units: dict[str, str] = {}
    timezone: str | None = None


def _num(value: float) -> str:
    return f"{value:g}"


def format_weather(place: Place, forecast: _Forecast) -> str:
    """One paragraph the model can quote: conditions, temperatures, humidity, wind, time."""
    cur, units = forecast.current, forecast.current_units
    parts = [describe_weather_code(cur.weather_code)]
    if cur.temperature_2m is not None:
        unit = units.get("temperature_2m", "°C")
        temp = f"{_num(cur.temperature_2m)} {unit}"
        if cur.apparent_temperature is not None:
            temp += f" (feels like {_num(cur.apparent_temperature)} {units.get('apparent_temperature', unit)})"
        parts.append(temp)
    if cur.relative_humidity_2m is not None:
        parts.append(f"humidity {_num(cur.relative_humidity_2m)}{units.get('relative_humidity_2m', '%')}")
    if cur.wind_speed_10m is not None:
        parts.append(f"wind {_num(cur.wind_speed_10m)} {units.get('wind_speed_10m', 'km/h')}")
    when = ""
    if cur.time:
        when = f" at {cur.time.replace('T', ' ')}" + (f" local time ({forecast.timezone})" if forecast.timezone else "")
    return f"Current weather in {place.label}{when}: {', '.join(parts)}. Source: Open-Meteo."


def make_weather_tool(
    *,
    geocoding_url: str = DEFAULT_GEOCODING_URL,
    forecast_url: str = DEFAULT_FORECAST_URL,
    timeout: float = 10.0,
    transport: httpx.AsyncBaseTransport | None = None,
    resolver: PlaceResolver | None = None,
) -> Tool:
    """The ``get_weather`` tool against Open-Meteo at the given URLs (tests point them at a fake)."""
    places = resolver or PlaceResolver(geocoding_url=geocoding_url, timeout=timeout, transport=transport)

    async def current(client: httpx.AsyncClient, place: Place) -> _Forecast:
        if place.latitude is None or place.longitude is None:
            raise UnknownPlaceError(place.name, "it has no coordinates to ask the weather for", tool="get_weather")
        body = await request_json(
            client, "GET", forecast_url, service=_SERVICE, budget=timeout,
            params={"latitude": place.latitude, "longitude": place.longitude, "current": CURRENT_FIELDS,
                    "timezone": "auto"},
        )
        try:
            return _Forecast.model_validate(body)
        except ValidationError as exc:
            raise ToolError(f"the {_SERVICE} forecast answer has an unexpected shape: {_first_error(exc)}") from None

    @tool
    async def get_weather(city: str) -> str:
        """Current weather (conditions, temperature, humidity, wind) for a city, from Open-Meteo.

        Args:
            city: City or place name in English or Chinese, e.g. "Beijing", "北京", "New York", "Boulder, Colorado".
        """
        name = " ".join(city.split())
        if not name:
            raise ToolArgumentError("get_weather: city: must not be empty", tool="get_weather")
        try:
            place = await places.resolve(name, zones=False)
        except UnknownPlaceError as exc:
            raise UnknownPlaceError(exc.place, str(exc).split(": ", 1)[-1], tool="get_weather") from None
        async with make_client(timeout, transport) as client:
            return format_weather(place, await current(client, place))

    return get_weather


def _first_error(exc: ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    return f"{'.'.join(str(p) for p in err['loc']) or 'body'}: {err['msg']}"
