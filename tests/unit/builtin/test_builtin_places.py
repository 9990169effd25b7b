"""Place resolution: zone forms and the table offline, the geocoder (with its time zone) next, cached;
nothing unresolvable ever becomes a default."""

from __future__ import annotations

import httpx
import pytest

from saber.cities import SCAN_LIMIT, find_city
from saber.tools.builtin.mentions import is_zone_form, place_mentions
from saber.tools.builtin.places import PlaceResolver, UnknownPlaceError, parse_zone
from saber.tools.errors import ToolError


def geocoder(results: dict[str, list[dict[str, object]]], asked: list[str]) -> PlaceResolver:
    def answer(request: httpx.Request) -> httpx.Response:
        name = request.url.params["name"]
        asked.append(name)
        found = results.get(name, [])
        return httpx.Response(200, json={"results": found} if found else {"generationtime_ms": 0.1})

    return PlaceResolver(geocoding_url="http://geo.test/v1/search", transport=httpx.MockTransport(answer))


@pytest.mark.parametrize(("text", "zone"), [
    ("UTC", "UTC"), ("gmt", "UTC"), ("GMT+8", "UTC+08:00"), ("UTC+5:30", "UTC+05:30"), ("utc-3", "UTC-03:00"),
    ("东八区", "UTC+08:00"), ("西五区", "UTC-05:00"), ("Europe/Berlin", "Europe/Berlin"), ("asia/kolkata", "Asia/Kolkata"),
    ("UTC+0", "UTC"),
])
def test_zone_forms_are_read_offline(text: str, zone: str) -> None:
    place = parse_zone(text)
    assert place is not None and place.timezone == zone and place.kind == "zone"


def test_offsets_out_of_range_name_the_text() -> None:
    with pytest.raises(UnknownPlaceError, match="UTC\\+15"):
        parse_zone("UTC+15")


async def test_the_table_answers_without_the_geocoder() -> None:
    asked: list[str] = []
    place = await geocoder({}, asked).resolve("东京")
    assert (place.name, place.timezone, place.source) == ("Tokyo", "Asia/Tokyo", "table") and asked == []


async def test_a_place_outside_the_table_is_geocoded_once_and_cached() -> None:
    asked: list[str] = []
    resolver = geocoder({"Akureyri": [{"name": "Akureyri", "latitude": 65.7, "longitude": -18.1,
                                       "timezone": "Atlantic/Reykjavik", "country": "Iceland"}]}, asked)
    first = await resolver.resolve("Akureyri")
    second = await resolver.resolve("akureyri")
    assert first == second and first.timezone == "Atlantic/Reykjavik" and first.source == "geocoder"
    assert asked == ["Akureyri"]


async def test_a_qualified_name_asks_for_the_name_and_prefers_the_qualifier() -> None:
    asked: list[str] = []
    boulders = [
        {"name": "Boulder", "latitude": 40.0, "longitude": -112.0, "timezone": "America/Denver", "country": "United States",
         "admin1": "Utah"},
        {"name": "Boulder", "latitude": 40.015, "longitude": -105.27, "timezone": "America/Denver",
         "country": "United States", "admin1": "Colorado"},
    ]
    place = await geocoder({"Boulder": boulders}, asked).resolve("Boulder, Colorado")
    assert asked == ["Boulder, Colorado", "Boulder"] and place.region == "Colorado" and place.latitude == 40.015


async def test_nothing_found_is_an_error_naming_the_place_and_is_cached() -> None:
    asked: list[str] = []
    resolver = geocoder({}, asked)
    for _ in range(2):
        with pytest.raises(UnknownPlaceError) as info:
            await resolver.resolve("Atlantis")
        assert "Atlantis" in str(info.value) and not info.value.retryable
    assert asked == ["Atlantis"]


async def test_an_unreachable_geocoder_is_a_retryable_error_naming_the_place() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    resolver = PlaceResolver(geocoding_url="http://geo.test/v1/search", transport=httpx.MockTransport(refuse))
    with pytest.raises(ToolError) as info:
        await resolver.resolve("Akureyri")
    assert "Akureyri" in info.value.message and info.value.retryable


async def test_the_weather_needs_a_place_not_a_time_zone() -> None:
    with pytest.raises(UnknownPlaceError, match="time zone"):
        await geocoder({}, []).resolve("UTC+8", zones=False)


@pytest.mark.parametrize(("query", "places"), [
    ("东京和纽约现在几点", ["东京", "纽约"]),
    ("What time is it in London and Paris?", ["London", "Paris"]),
    ("北京、东京、伦敦现在各是几点", ["北京", "东京", "伦敦"]),
    ("what time is it in Boulder, Colorado and Denver", ["Boulder, Colorado", "Denver"]),
    ("time in UTC+5:30 and UTC-3", ["UTC+5:30", "UTC-3"]),
    ("大理的天气和时间", ["大理"]),
    ("what time is it in Europe/Berlin?", ["Europe/Berlin"]),
    ("Reykjavik and Oslo time", ["Reykjavik", "Oslo"]),
    ("现在几点了", []),
    ("今天天气怎么样", []),
])
def test_every_place_a_query_names_is_found_in_order(query: str, places: list[str]) -> None:
    assert place_mentions(query) == places


def test_zone_forms_are_told_apart_from_places() -> None:
    assert is_zone_form("GMT+8") and is_zone_form("Europe/Berlin") and is_zone_form("东八区")
    assert not is_zone_form("Tokyo") and not is_zone_form("大理")


def test_scanning_is_bounded_to_the_head_of_a_huge_text() -> None:
    huge = "x " * SCAN_LIMIT + "Tokyo"
    assert find_city(huge) is None and place_mentions("weather " + huge) == []
    assert find_city("Tokyo " + "x" * 5_000_000) is not None


@pytest.mark.parametrize(("query", "places"), [
    ("Gotham 天气", ["Gotham"]),
    ("Springfield 天气怎么样", ["Springfield"]),
    ("San Francisco 的天气", ["San Francisco"]),
    ("Berlin 现在的时间", ["Berlin"]),
    ("Python 时间复杂度", []),
    ("Linux 现在怎么样", []),
])
def test_a_latin_name_right_before_a_chinese_weather_or_time_word_is_a_place(query: str, places: list[str]) -> None:
    assert place_mentions(query) == places
