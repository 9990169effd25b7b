"""get_weather against a loopback imitation of Open-Meteo (geocoding + forecast)."""

from __future__ import annotations

from typing import Any

import pytest
from builtin_fakes import FakeService, Route, Seen

from saber.tools import ToolError
from saber.tools.builtin import make_weather_tool

GEO, FORECAST = "/v1/search", "/v1/forecast"


def forecast_body(**current: Any) -> dict[str, Any]:
    values = {"time": "2025-01-20T15:45", "temperature_2m": -3.4, "relative_humidity_2m": 71,
              "apparent_temperature": -8.2, "weather_code": 71, "wind_speed_10m": 17.9} | current
    return {
        "latitude": 0, "longitude": 0, "timezone": "Europe/Oslo",
        "current_units": {"time": "iso8601", "temperature_2m": "°C", "relative_humidity_2m": "%",
                          "apparent_temperature": "°C", "weather_code": "wmo code", "wind_speed_10m": "km/h"},
        "current": values,
    }


def weather_tool(service: FakeService, timeout: float = 5.0) -> Any:
    return make_weather_tool(geocoding_url=service.url(GEO), forecast_url=service.url(FORECAST), timeout=timeout)


async def test_geocoded_city_reports_what_the_service_served(fake_service: FakeService) -> None:
    fake_service.routes[GEO] = Route(body={"results": [
        {"name": "Tromsø", "latitude": 69.6496, "longitude": 18.956, "country": "Norway", "admin1": "Troms"}]})
    fake_service.routes[FORECAST] = Route(body=forecast_body())

    text = await weather_tool(fake_service).run({"city": "Tromso"})

    assert "Tromsø, Troms, Norway" in text
    for served in ("-3.4 °C", "-8.2 °C", "71%", "17.9 km/h", "2025-01-20 15:45", "Europe/Oslo"):
        assert served in text
    assert "slight snowfall" in text  # WMO 71
    geo = fake_service.calls(GEO)[0]
    assert geo.query["name"] == "Tromso" and geo.query["count"] == "5" and geo.query["language"] == "en"
    fc = fake_service.calls(FORECAST)[0]
    assert (fc.query["latitude"], fc.query["longitude"]) == ("69.6496", "18.956")
    assert set(fc.query["current"].split(",")) == {
        "temperature_2m", "relative_humidity_2m", "apparent_temperature", "weather_code", "wind_speed_10m"}
    assert fc.query["timezone"] == "auto"


async def test_known_chinese_city_skips_geocoding(fake_service: FakeService) -> None:
    fake_service.routes[FORECAST] = Route(body=forecast_body(temperature_2m=6.5, weather_code=3))

    text = await weather_tool(fake_service).run({"city": "北京"})

    assert fake_service.calls(GEO) == []
    fc = fake_service.calls(FORECAST)[0]
    assert abs(float(fc.query["latitude"]) - 39.9) < 0.1 and abs(float(fc.query["longitude"]) - 116.4) < 0.1
    assert "Beijing" in text and "北京" in text and "6.5 °C" in text and "overcast" in text


async def test_chinese_name_outside_the_table_is_geocoded_in_chinese(fake_service: FakeService) -> None:
    fake_service.routes[GEO] = Route(body={"results": [
        {"name": "桂林市", "latitude": 25.28, "longitude": 110.29, "country": "中国", "admin1": "广西"}]})
    fake_service.routes[FORECAST] = Route(body=forecast_body(temperature_2m=18.25))

    text = await weather_tool(fake_service).run({"city": "桂林"})

    geo = fake_service.calls(GEO)[0]
    assert geo.query["name"] == "桂林" and geo.query["language"] == "zh"
    assert "桂林市" in text and "18.25 °C" in text


async def test_unknown_city_is_not_retryable_and_named(fake_service: FakeService) -> None:
    fake_service.routes[GEO] = Route(body={"generationtime_ms": 0.5})  # Open-Meteo omits "results"

    with pytest.raises(ToolError) as info:
        await weather_tool(fake_service).run({"city": "Atlantisville"})

    assert not info.value.retryable
    assert "Atlantisville" in info.value.message and "unknown place" in info.value.message
    assert fake_service.calls(FORECAST) == []


async def test_city_inside_longer_text_falls_back_to_the_table(fake_service: FakeService) -> None:
    fake_service.routes[GEO] = Route(body={})
    fake_service.routes[FORECAST] = Route(body=forecast_body())

    text = await weather_tool(fake_service).run({"city": "上海市浦东新区"})

    assert len(fake_service.calls(GEO)) == 1
    assert "Shanghai" in text


async def test_service_that_never_answers_times_out_as_retryable(fake_service: FakeService) -> None:
    fake_service.routes[GEO] = Route(hang=True)

    with pytest.raises(ToolError) as info:
        await weather_tool(fake_service, timeout=0.5).run({"city": "Tromso"})

    assert info.value.retryable
    assert "Tromso" in info.value.message and "geocoding service" in info.value.message
    assert "could not be reached" in info.value.message


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_5xx_is_retryable(fake_service: FakeService, status: int) -> None:
    fake_service.routes[FORECAST] = Route(status=status, body={"error": True, "reason": "backend overloaded"})

    with pytest.raises(ToolError) as info:
        await weather_tool(fake_service).run({"city": "Tokyo"})

    assert info.value.retryable
    assert f"HTTP {status}" in info.value.message and "backend overloaded" in info.value.message


async def test_4xx_is_not_retryable_and_carries_the_reason(fake_service: FakeService) -> None:
    def reject(seen: Seen) -> Route:
        return Route(status=400, body={"error": True, "reason": f"Latitude must be in range, got {seen.query['latitude']}"})

    fake_service.routes[FORECAST] = reject

    with pytest.raises(ToolError) as info:
        await weather_tool(fake_service).run({"city": "London"})

    assert not info.value.retryable
    assert "HTTP 400" in info.value.message and "Latitude must be in range" in info.value.message


async def test_html_instead_of_json_is_reported(fake_service: FakeService) -> None:
    fake_service.routes[FORECAST] = Route(raw=b"<html>captive portal</html>")

    with pytest.raises(ToolError, match="not JSON"):
        await weather_tool(fake_service).run({"city": "Paris"})


async def test_connection_refused_is_retryable_and_says_unreachable(refused_url: str) -> None:
    tool = make_weather_tool(geocoding_url=refused_url + GEO, forecast_url=refused_url + FORECAST, timeout=5)

    with pytest.raises(ToolError) as info:
        await tool.run({"city": "Sydney"})

    assert info.value.retryable
    assert "could not be reached" in info.value.message and "unreachable" in info.value.message


async def test_builtin_tools_use_the_configured_service_urls(
    fake_service: FakeService, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    from saber.config import Settings
    from saber.tools.builtin import builtin_tools

    monkeypatch.setenv("SABER_HOME", str(tmp_path))
    fake_service.routes[GEO] = Route(body={"results": [{"name": "Reykjavík", "latitude": 64.1355, "longitude": -21.8954,
                                                        "country": "Iceland"}]})
    fake_service.routes[FORECAST] = Route(body=forecast_body(temperature_2m=1.15, weather_code=0))
    settings = Settings(weather={"geocoding_url": fake_service.url(GEO), "forecast_url": fake_service.url(FORECAST)})
    weather = next(t for t in builtin_tools(settings) if t.name == "get_weather")

    text = await weather.run({"city": "Reykjavik"})

    assert "Reykjavík, Iceland" in text and "1.15 °C" in text and "clear sky" in text
