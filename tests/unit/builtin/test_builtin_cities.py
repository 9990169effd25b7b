"""The known-city table and finding a city in free text."""

from __future__ import annotations

from zoneinfo import ZoneInfo

import pytest

from saber.tools.builtin import CITIES, city_names, find_city, lookup_city

MUST_HAVE = ["北京", "上海", "广州", "深圳", "杭州", "成都", "香港", "台北", "东京", "首尔", "新加坡", "纽约",
             "伦敦", "巴黎", "柏林", "莫斯科", "悉尼", "洛杉矶", "Beijing", "Tokyo", "New York", "San Francisco"]


def test_table_is_large_and_every_row_is_a_usable_fact() -> None:
    assert len(CITIES) >= 60
    for city in CITIES:
        ZoneInfo(city.timezone)  # raises when the zone does not exist
        assert -90 <= city.latitude <= 90 and -180 <= city.longitude <= 180, city
        assert city.names_zh, f"{city.name} has no Chinese name"


@pytest.mark.parametrize("name", MUST_HAVE)
def test_most_asked_cities_are_known(name: str) -> None:
    assert lookup_city(name) is not None


@pytest.mark.parametrize(
    ("text", "expected", "zone"),
    [
        ("北京天气怎么样", "Beijing", "Asia/Shanghai"),
        ("东京现在几点", "Tokyo", "Asia/Tokyo"),
        ("what's the time in NEW YORK right now?", "New York", "America/New_York"),
        ("在New York出差", "New York", "America/New_York"),
        ("weather in são paulo", "São Paulo", "America/Sao_Paulo"),
        ("weather in Sao Paulo", "São Paulo", "America/Sao_Paulo"),
        ("Xi’an food", "Xi'an", "Asia/Shanghai"),
        ("hotels in San Francisco", "San Francisco", "America/Los_Angeles"),
        ("旧金山和洛杉矶", "San Francisco", "America/Los_Angeles"),  # the first mention wins
        ("新德里的时间", "New Delhi", "Asia/Kolkata"),  # longest name at a position: not 德里 alone
        ("香港", "Hong Kong", "Asia/Hong_Kong"),
        ("台北", "Taipei", "Asia/Taipei"),
    ],
)
def test_find_city_in_free_text(text: str, expected: str, zone: str) -> None:
    city = find_city(text)
    assert city is not None and city.name == expected and city.timezone == zone


@pytest.mark.parametrize(
    "text",
    ["Rioja wine tasting", "Parisian cafés", "brooklyn bridge", "罗马尼亚的首都", "江西安徽", "任务完成都很顺利", "", "hello"],
)
def test_no_city_where_none_is_meant(text: str) -> None:
    assert find_city(text) is None


def test_word_boundaries_and_case_for_english() -> None:
    assert find_city("I love ROME") is not None
    assert find_city("chromed") is None  # "rome" inside a word
    city = find_city("New York City marathon")
    assert city is not None and city.name == "New York"


def test_lookup_is_exact_but_forgiving_about_suffixes_and_case() -> None:
    beijing = lookup_city("Beijing")
    assert beijing is not None
    assert lookup_city("北京市") is beijing and lookup_city("beijing") is beijing and lookup_city(" Peking. ") is beijing
    assert lookup_city("北京市朝阳区") is None
    assert lookup_city("Springfield") is None


def test_city_names_cover_both_languages_longest_first() -> None:
    names = city_names()
    assert {"北京", "Beijing", "纽约", "New York", "NYC"} <= set(names)
    assert [len(n) for n in names] == sorted((len(n) for n in names), reverse=True)
    for name in names:
        assert find_city(name) is lookup_city(name) is not None, name
