"""Issue #33 item 1: places outside the hand table are known offline from CLDR's exemplar cities
(every locale Babel ships) and time zone abbreviations; a name of two clocks is said, not guessed."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from saber.cities import lookup_city
from saber.tools.builtin.clock import make_time_tool, resolve_timezone
from saber.tools.builtin.places import AmbiguousPlaceError, PlaceResolver, UnknownPlaceError, resolve_offline
from saber.tools.errors import ToolArgumentError, ToolError
from saber.zonenames import build_zone_names, name_key, read_or_build, zone_names

ZH = [("霍巴特", "Australia/Hobart"), ("努克", "America/Nuuk"), ("温得和克", "Africa/Windhoek"),
      ("第比利斯", "Asia/Tbilisi"), ("蒙得维的亚", "America/Montevideo")]
EN = [("Reykjavik", "Atlantic/Reykjavik"), ("Anchorage", "America/Anchorage"), ("Halifax", "America/Halifax"),
      ("Noumea", "Pacific/Noumea"), ("Winnipeg", "America/Winnipeg")]


def offline_resolver(asked: list[str]) -> PlaceResolver:
    def refuse(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.params["name"])
        raise httpx.ConnectError("unreachable", request=request)

    return PlaceResolver(geocoding_url="http://geo.test/v1/search", transport=httpx.MockTransport(refuse))


@pytest.mark.parametrize(("name", "zone"), ZH + EN)
def test_exemplar_cities_outside_the_table_are_known_offline(name: str, zone: str) -> None:
    assert lookup_city(name) is None  # the point: the hand table does not know them
    place = resolve_offline(name)
    assert place is not None and place.timezone == zone and place.source == "cldr" and place.kind == "city"


@pytest.mark.parametrize(("name", "zone"), ZH + EN)
async def test_get_time_answers_them_without_the_geocoder(name: str, zone: str) -> None:
    asked: list[str] = []
    get_time = make_time_tool(resolver=offline_resolver(asked))
    line = await get_time.run({"timezone": name})
    assert zone in line and asked == []


def test_the_labels_name_the_city_in_english_and_chinese_and_the_country() -> None:
    place = resolve_offline("霍巴特")
    assert place is not None and place.label == "Hobart (霍巴特), Australia"
    assert resolve_offline("Reykjavík") == resolve_offline("reykjavik")  # accents and case do not matter


@pytest.mark.parametrize("name", ["Hobart time", "霍巴特时间", "霍巴特的时间", "REYKJAVIK TIME"])
def test_a_time_word_after_the_city_is_read(name: str) -> None:
    place = resolve_offline(name)
    assert place is not None and place.timezone in {"Australia/Hobart", "Atlantic/Reykjavik"}


@pytest.mark.parametrize(("name", "zone"), [("Hobart", "Australia/Hobart"), ("Tiflis", "Asia/Tbilisi"),
                                            ("Oslo", "Europe/Oslo"), ("Lisboa", "Europe/Lisbon"),
                                            ("Москва", "Europe/Moscow"), ("ホバート", "Australia/Hobart")])
def test_other_locales_names_count_too(name: str, zone: str) -> None:
    place = resolve_offline(name)
    assert place is not None and place.timezone == zone


@pytest.mark.parametrize(("abbreviation", "zone"), [("JST", "Asia/Tokyo"), ("KST", "Asia/Seoul"),
                                                    ("BST", "Europe/London"), ("AEST", "Australia/Sydney"),
                                                    ("EST", "America/New_York"), ("MSK", "Europe/Moscow")])
def test_abbreviations_name_their_zone(abbreviation: str, zone: str) -> None:
    assert zone_names().abbreviation(abbreviation) == (zone,)
    place = resolve_offline(abbreviation)  # "EST" is also an IANA zone (fixed UTC-5): that comes first
    assert place is not None and place.kind == "zone" and place.timezone in {zone, abbreviation}


def test_an_abbreviation_resolves_to_its_clock() -> None:
    place = resolve_offline("JST")
    assert place is not None and place.timezone == "Asia/Tokyo"
    cet = resolve_offline("CET")  # also an IANA name: read as the zone
    assert cet is not None and cet.timezone is not None


def test_lower_case_words_are_not_abbreviations() -> None:
    assert zone_names().abbreviation("eat") == () and zone_names().abbreviation("cat") == ()
    assert zone_names().abbreviation("CAT") != ()


@pytest.mark.parametrize(("name", "zones"), [
    ("Salvador", {"America/Bahia", "America/El_Salvador"}),
    ("CST", {"Asia/Shanghai", "America/Havana"}),
    ("IST", {"Asia/Kolkata", "Europe/Dublin", "Asia/Jerusalem"}),
])
async def test_an_ambiguous_name_is_said_not_guessed(name: str, zones: set[str]) -> None:
    asked: list[str] = []
    with pytest.raises(AmbiguousPlaceError) as caught:
        await offline_resolver(asked).resolve(name)
    assert zones <= set(caught.value.zones) and asked == []
    assert f"ambiguous place {name!r}" in str(caught.value) and all(z in str(caught.value) for z in zones)
    with pytest.raises(ToolArgumentError, match="ambiguous place"):
        resolve_timezone(name)
    get_time = make_time_tool(resolver=offline_resolver(asked))
    with pytest.raises(ToolError, match=f"get_time: ambiguous place '{name}'"):
        await get_time.run({"timezone": name})


async def test_an_unknown_city_goes_to_the_geocoder_and_says_it_is_unreachable() -> None:
    asked: list[str] = []
    with pytest.raises(ToolError, match="cannot look up the place 'Gotham'") as caught:
        await offline_resolver(asked).resolve("Gotham")
    assert asked == ["Gotham"] and not isinstance(caught.value, UnknownPlaceError)


async def test_the_weather_still_needs_coordinates_so_cldr_cities_go_to_the_geocoder() -> None:
    asked: list[str] = []
    assert resolve_offline("Hobart", zones=False) is None
    with pytest.raises(ToolError):
        await offline_resolver(asked).resolve("Hobart", zones=False)
    assert asked == ["Hobart"]


def test_the_table_still_comes_first() -> None:
    place = resolve_offline("Singapore")
    assert place is not None and place.source == "table" and place.latitude is not None


def test_names_are_compared_without_case_or_latin_accents_but_kana_keep_their_marks() -> None:
    assert name_key("Reykjavík") == name_key("REYKJAVIK")
    assert name_key("ホバート") != name_key("ホハート")


def test_the_index_is_cached_on_disk_and_read_back(tmp_path: Path) -> None:
    built = read_or_build(tmp_path)
    files = list(tmp_path.iterdir())
    assert len(files) == 1 and files[0].suffix == ".json"
    again = read_or_build(tmp_path)
    assert again == built and again.cities("霍巴特") == ("Australia/Hobart",)
    files[0].write_text("{not json", encoding="utf-8")  # a damaged cache is rebuilt, not trusted
    assert read_or_build(tmp_path).cities("Reykjavik") == ("Atlantic/Reykjavik",)


def test_every_zone_the_index_names_exists() -> None:
    from zoneinfo import ZoneInfo

    names = build_zone_names()
    zones = {z for zs in (*names.by_city.values(), *names.by_abbreviation.values()) for z in zs}
    for zone in zones:
        ZoneInfo(zone)
    assert len(names.by_city) > 10_000
