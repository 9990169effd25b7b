"""get_time with a fixed clock: exact local times for zones, offsets and city names."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from saber.tools import Tool, ToolArgumentError, ToolError
from saber.tools.builtin import PlaceResolver, make_time_tool

MONDAY_NOON_UTC = datetime(2024, 1, 15, 12, 0, 0, tzinfo=UTC)  # a Monday, northern winter
JULY_UTC = datetime(2024, 7, 4, 3, 30, 15, tzinfo=UTC)  # a Thursday, northern summer


def at(instant: datetime, **kwargs: str) -> Tool:
    return make_time_tool(clock=lambda: instant, **kwargs)


@pytest.mark.parametrize(
    ("zone", "local", "weekday", "iso_offset"),
    [
        ("Asia/Tokyo", "2024-01-15 21:00:00", "Monday", "+09:00"),
        ("asia/tokyo", "2024-01-15 21:00:00", "Monday", "+09:00"),
        ("UTC", "2024-01-15 12:00:00", "Monday", "+00:00"),
        ("America/New_York", "2024-01-15 07:00:00", "Monday", "-05:00"),
        ("Asia/Kathmandu", "2024-01-15 17:45:00", "Monday", "+05:45"),
        ("utc+8", "2024-01-15 20:00:00", "Monday", "+08:00"),
        ("UTC+08:00", "2024-01-15 20:00:00", "Monday", "+08:00"),
        ("GMT-05:30", "2024-01-15 06:30:00", "Monday", "-05:30"),
        ("+0530", "2024-01-15 17:30:00", "Monday", "+05:30"),
        ("UTC-11", "2024-01-15 01:00:00", "Monday", "-11:00"),
        ("UTC+14", "2024-01-16 02:00:00", "Tuesday", "+14:00"),
        ("东八区", "2024-01-15 20:00:00", "Monday", "+08:00"),
        ("北京", "2024-01-15 20:00:00", "Monday", "+08:00"),
        ("北京时间", "2024-01-15 20:00:00", "Monday", "+08:00"),
        ("东京", "2024-01-15 21:00:00", "Monday", "+09:00"),
        ("New York", "2024-01-15 07:00:00", "Monday", "-05:00"),
        ("london", "2024-01-15 12:00:00", "Monday", "+00:00"),
        ("悉尼", "2024-01-15 23:00:00", "Monday", "+11:00"),
    ],
)
async def test_winter_instant(zone: str, local: str, weekday: str, iso_offset: str) -> None:
    text = await at(MONDAY_NOON_UTC).run({"timezone": zone})
    assert f"{weekday}, {local}" in text
    assert f"{local.replace(' ', 'T')}{iso_offset}" in text


@pytest.mark.parametrize(
    ("zone", "local", "weekday", "iso_offset"),
    [
        ("纽约", "2024-07-03 23:30:15", "Wednesday", "-04:00"),  # summer time, and the day before
        ("London", "2024-07-04 04:30:15", "Thursday", "+01:00"),
        ("Sydney", "2024-07-04 13:30:15", "Thursday", "+10:00"),
        ("洛杉矶", "2024-07-03 20:30:15", "Wednesday", "-07:00"),
    ],
)
async def test_summer_instant_follows_daylight_saving(zone: str, local: str, weekday: str, iso_offset: str) -> None:
    text = await at(JULY_UTC).run({"timezone": zone})
    assert f"{weekday}, {local}" in text and f"{local.replace(' ', 'T')}{iso_offset}" in text


async def test_line_names_the_city_and_zone() -> None:
    text = await at(MONDAY_NOON_UTC).run({"timezone": "东京"})
    assert "Tokyo" in text and "Asia/Tokyo" in text and "UTC+09:00" in text
    assert "\n" not in text


async def test_default_zone_comes_from_the_factory() -> None:
    tool = at(MONDAY_NOON_UTC, default_timezone="Europe/Berlin")
    assert tool.schema["properties"]["timezone"]["default"] == "Europe/Berlin"
    assert "2024-01-15T13:00:00+01:00" in await tool.run({})
    assert "2024-01-15T13:00:00+01:00" in await tool.run({"timezone": "  "})


async def test_naive_clock_is_read_as_utc() -> None:
    text = await at(datetime(2024, 1, 15, 12, 0, 0)).run({"timezone": "Asia/Tokyo"})
    assert "2024-01-15T21:00:00+09:00" in text


def nothing_found() -> PlaceResolver:
    """A geocoder that knows no place (Open-Meteo omits "results" then)."""
    return PlaceResolver(geocoding_url="http://geo.test/v1/search",
                         transport=httpx.MockTransport(lambda request: httpx.Response(200, json={"generationtime_ms": 0.1})))


@pytest.mark.parametrize("bad", ["Mars/Olympus_Mons", "Atlantis", "UTC+15", "../../etc/passwd", "东十五区"])
async def test_unknown_zone_is_a_named_argument_error(bad: str) -> None:
    with pytest.raises(ToolArgumentError) as info:
        await make_time_tool(clock=lambda: MONDAY_NOON_UTC, resolver=nothing_found()).run({"timezone": bad})
    assert not info.value.retryable
    assert bad in info.value.message


async def test_a_place_the_geocoder_cannot_be_asked_about_is_an_error_never_the_default() -> None:
    down = PlaceResolver(geocoding_url="http://geo.test/v1/search",
                         transport=httpx.MockTransport(lambda request: httpx.Response(503, json={"reason": "down"})))
    with pytest.raises(ToolError) as info:
        await make_time_tool(clock=lambda: MONDAY_NOON_UTC, resolver=down).run({"timezone": "Boulder"})
    assert "Boulder" in info.value.message and "Asia/Shanghai" not in info.value.message


def test_bad_default_fails_at_construction() -> None:
    with pytest.raises(ValueError, match="default_timezone"):
        make_time_tool(default_timezone="Nowhere/Land")


ZONES = ["Asia/Shanghai", "America/Sao_Paulo", "Europe/Dublin", "Australia/Lord_Howe", "Pacific/Chatham", "UTC-3"]


@settings(max_examples=60, deadline=None)
@given(
    instant=st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2099, 12, 31)).map(
        lambda d: d.replace(tzinfo=UTC)),
    zone=st.sampled_from(ZONES),
)
def test_iso_timestamp_is_always_the_same_instant(instant: datetime, zone: str) -> None:
    text = asyncio.run(at(instant).run({"timezone": zone}))
    iso = re.search(r"ISO 8601: (\S+)$", text)
    assert iso is not None
    assert datetime.fromisoformat(iso.group(1)) == instant.replace(microsecond=0)
