"""get_weather through httpx.MockTransport: code mapping, argument and response problems."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from saber.tools import ToolArgumentError, ToolError
from saber.tools.builtin import make_weather_tool
from saber.tools.builtin.weather import WMO_CODES, describe_weather_code

GEO = "https://geo.test/v1/search"
FORECAST = "https://wx.test/v1/forecast"


def tool_with(handler: Any) -> Any:
    return make_weather_tool(geocoding_url=GEO, forecast_url=FORECAST, timeout=5,
                             transport=httpx.MockTransport(handler))


def current(code: int) -> dict[str, Any]:
    return {"current": {"time": "2025-03-01T09:00", "temperature_2m": 11.7, "relative_humidity_2m": 55,
                        "apparent_temperature": 9.9, "weather_code": code, "wind_speed_10m": 4.3}}


@pytest.mark.parametrize(("code", "words"), [(0, "clear sky"), (61, "slight rain"), (95, "thunderstorm"),
                                             (45, "fog"), (86, "heavy snow showers")])
async def test_wmo_code_becomes_words(code: int, words: str) -> None:
    text = await tool_with(lambda req: httpx.Response(200, json=current(code))).run({"city": "Tokyo"})
    assert words in text and "11.7" in text and "9.9" in text and "55%" in text and "4.3" in text


def test_every_documented_code_has_words_and_unknown_codes_say_so() -> None:
    documented = {0, 1, 2, 3, 45, 48, 51, 53, 55, 56, 57, 61, 63, 65, 66, 67, 71, 73, 75, 77, 80, 81, 82, 85, 86,
                  95, 96, 99}
    assert set(WMO_CODES) == documented
    assert "42" in describe_weather_code(42)
    assert describe_weather_code(None) == "conditions not reported"


async def test_known_english_city_goes_straight_to_the_forecast() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=current(1))

    await tool_with(handler).run({"city": "new york"})

    assert [str(r.url).split("?")[0] for r in seen] == [FORECAST]
    assert seen[0].url.params["latitude"].startswith("40.7") and seen[0].url.params["longitude"].startswith("-74.0")


async def test_empty_city_is_an_argument_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise AssertionError("no request for an empty city")

    with pytest.raises(ToolArgumentError, match="city"):
        await tool_with(handler).run({"city": "   "})
    with pytest.raises(ToolArgumentError, match="city"):
        await tool_with(handler).run({})


async def test_unexpected_shape_is_a_clear_error() -> None:
    with pytest.raises(ToolError, match="unexpected shape") as info:
        await tool_with(lambda req: httpx.Response(200, json={"hourly": {}})).run({"city": "Tokyo"})
    assert not info.value.retryable


async def test_429_is_retryable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(429, content=json.dumps({"reason": "Too many requests"}))

    with pytest.raises(ToolError) as info:
        await tool_with(handler).run({"city": "Tokyo"})
    assert info.value.retryable and "HTTP 429" in info.value.message and "Too many requests" in info.value.message


async def test_network_error_from_transport_is_retryable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno -3] Temporary failure in name resolution", request=request)

    with pytest.raises(ToolError) as info:
        await tool_with(handler).run({"city": "Tokyo"})
    assert info.value.retryable
    assert "could not be reached" in info.value.message and "name resolution" in info.value.message


async def test_redirect_loop_is_a_tool_error_not_a_crash() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(302, headers={"Location": str(request.url)})

    with pytest.raises(ToolError) as info:
        await tool_with(handler).run({"city": "Tokyo"})
    assert not info.value.retryable and "redirect" in info.value.message.lower()


@pytest.mark.parametrize("url", ["wx.test/v1/forecast", "ftp://wx.test/v1/forecast"])
async def test_a_url_without_http_is_a_setting_to_fix_not_retryable(url: str) -> None:
    tool = make_weather_tool(geocoding_url=GEO, forecast_url=url, timeout=5)
    with pytest.raises(ToolError) as info:
        await tool.run({"city": "Tokyo"})
    assert not info.value.retryable and "is invalid" in info.value.message
