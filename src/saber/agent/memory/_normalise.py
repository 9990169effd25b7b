"""Normalising preference values: cities, timezones, languages and countries to one spelling each."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from saber.language import has_han

CityNormaliser = Callable[[str], "str | None"]


_is_cjk = has_han


def known_city(raw: str) -> str | None:
    """The canonical name of a city in ``saber.cities`` (Chinese name for Chinese input)."""
    try:
        from saber.cities import find_city
    except ImportError:  # the cities table is optional for memory
        return None
    city = find_city(raw)
    if city is None:
        return None
    if _is_cjk(raw) and city.name_zh:
        return city.name_zh
    return city.name


_PROVINCE = re.compile(r"^[\u4e00-\u9fff]{2,3}?(?:省|自治区)")
_CITY_SUFFIX = re.compile(r"^([\u4e00-\u9fff]{2,8}?)市")
PLACE_SUFFIX = re.compile(r"(?:市|省|县|区|州|镇| city| town)$", re.IGNORECASE)


def strip_place(raw: str) -> str:
    """"广东省深圳市南山区" → "深圳"; "北京市" → "北京"; other text unchanged."""
    value = raw.strip()
    if _is_cjk(value):
        value = _PROVINCE.sub("", value) or value
        m = _CITY_SUFFIX.match(value)
        if m:
            value = m.group(1)
    return value


_ZH_NUMBERS = {"一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10, "十一": 11, "十二": 12}
_TZ_ALIASES = {
    "北京时间": "Asia/Shanghai", "中国时间": "Asia/Shanghai", "上海时间": "Asia/Shanghai",
    "东京时间": "Asia/Tokyo", "日本时间": "Asia/Tokyo", "首尔时间": "Asia/Seoul", "韩国时间": "Asia/Seoul",
    "伦敦时间": "Europe/London", "英国时间": "Europe/London", "巴黎时间": "Europe/Paris",
    "纽约时间": "America/New_York", "美东时间": "America/New_York", "美国东部时间": "America/New_York",
    "美西时间": "America/Los_Angeles", "太平洋时间": "America/Los_Angeles", "美国西部时间": "America/Los_Angeles",
    "新加坡时间": "Asia/Singapore", "香港时间": "Asia/Hong_Kong",
    "pst": "America/Los_Angeles", "pdt": "America/Los_Angeles", "est": "America/New_York",
    "edt": "America/New_York", "jst": "Asia/Tokyo", "kst": "Asia/Seoul", "bst": "Europe/London",
    "cet": "Europe/Paris", "cest": "Europe/Paris", "ist": "Asia/Kolkata", "sgt": "Asia/Singapore",
    "hkt": "Asia/Hong_Kong", "aest": "Australia/Sydney", "utc": "UTC", "gmt": "UTC", "z": "UTC",
}
_OFFSET = re.compile(r"^(?:utc|gmt)\s*([+-])\s*(\d{1,2})(?::?00)?$", re.IGNORECASE)
_ZH_ZONE = re.compile(r"^(东|西)(十[一二]?|[一二三四五六七八九十]|\d{1,2})区$")


@cache
def _zone_exists(name: str) -> bool:
    if not re.fullmatch(r"[A-Za-z0-9_+\-/]+", name):
        return False
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


@cache
def _zones_by_folded() -> dict[str, str]:
    return {name.casefold(): name for name in available_timezones()}


def _etc_zone(sign_east: bool, hours: int) -> str | None:
    # IANA's Etc zones invert the sign: UTC+8 is Etc/GMT-8.
    if hours == 0:
        return "UTC"
    if hours > (14 if sign_east else 12):
        return None
    return f"Etc/GMT{'-' if sign_east else '+'}{hours}"


def normalise_timezone(raw: str) -> str | None:
    """An IANA zone name for "Asia/Tokyo", "UTC+8", "东八区", "北京时间", "PST"; None when unknown."""
    value = unicodedata.normalize("NFKC", raw).strip().strip("。.，,")
    if value.casefold() in _TZ_ALIASES:
        return _TZ_ALIASES[value.casefold()]
    if value in _TZ_ALIASES:
        return _TZ_ALIASES[value]
    m = _OFFSET.match(value)
    if m:
        return _etc_zone(m.group(1) == "+", int(m.group(2)))
    m = _ZH_ZONE.match(value)
    if m:
        hours = int(m.group(2)) if m.group(2).isdigit() else _ZH_NUMBERS[m.group(2)]
        return _etc_zone(m.group(1) == "东", hours)
    if "/" in value:
        if _zone_exists(value):
            return value
        canonical = _zones_by_folded().get(value.casefold())
        if canonical:
            return canonical
    city = _city_timezone(value)
    return city


def _city_timezone(value: str) -> str | None:
    try:
        from saber.cities import lookup_city
    except ImportError:
        return None
    city = lookup_city(value.removesuffix("时间"))
    return city.timezone if city else None


_LANGUAGES = {
    "zh": ("中文", "汉语", "普通话", "国语", "华语", "chinese", "mandarin", "zh", "zh-cn", "zh-hans"),
    "en": ("英文", "英语", "english", "en", "en-us", "en-gb"),
    "ja": ("日语", "日文", "japanese", "ja"),
    "ko": ("韩语", "韩文", "朝鲜语", "korean", "ko"),
    "fr": ("法语", "法文", "french", "fr"),
    "de": ("德语", "德文", "german", "de"),
    "es": ("西班牙语", "西班牙文", "spanish", "es"),
    "ru": ("俄语", "俄文", "russian", "ru"),
    "yue": ("粤语", "广东话", "cantonese", "yue"),
}
LANGUAGE_NAMES: dict[str, str] = {name: code for code, names in _LANGUAGES.items() for name in names}


def normalise_language(raw: str) -> str | None:
    """An ISO 639 code ("zh", "en", ...) for a language name in Chinese or English."""
    return LANGUAGE_NAMES.get(unicodedata.normalize("NFKC", raw).strip().casefold())


_COUNTRIES = {
    "China": ("中国", "中华人民共和国", "china", "prc"),
    "United States": ("美国", "united states", "usa", "us", "america", "the us", "the usa", "the united states"),
    "United Kingdom": ("英国", "united kingdom", "uk", "the uk", "britain", "great britain", "england", "the united kingdom"),
    "Japan": ("日本", "japan"),
    "South Korea": ("韩国", "south korea", "korea"),
    "Singapore": ("新加坡", "singapore"),
    "Canada": ("加拿大", "canada"),
    "Australia": ("澳大利亚", "澳洲", "australia"),
    "New Zealand": ("新西兰", "new zealand"),
    "Germany": ("德国", "germany"),
    "France": ("法国", "france"),
    "Italy": ("意大利", "italy"),
    "Spain": ("西班牙", "spain"),
    "Russia": ("俄罗斯", "russia"),
    "India": ("印度", "india"),
    "Brazil": ("巴西", "brazil"),
    "Mexico": ("墨西哥", "mexico"),
    "Malaysia": ("马来西亚", "malaysia"),
    "Thailand": ("泰国", "thailand"),
    "Vietnam": ("越南", "vietnam"),
    "Netherlands": ("荷兰", "netherlands", "the netherlands"),
    "Switzerland": ("瑞士", "switzerland"),
    "Sweden": ("瑞典", "sweden"),
}
_COUNTRY_NAMES = {name: canonical for canonical, names in _COUNTRIES.items() for name in names}
_COUNTRY_ZH = {canonical: names[0] for canonical, names in _COUNTRIES.items()}


def known_country(raw: str) -> str | None:
    """Canonical country name (Chinese for Chinese input), None when not in the table."""
    value = unicodedata.normalize("NFKC", raw).strip().casefold()
    canonical = _COUNTRY_NAMES.get(value)
    if canonical is None:
        return None
    return _COUNTRY_ZH[canonical] if _is_cjk(raw) else canonical


def country_pattern_zh() -> str:
    return "|".join(sorted((n for n in _COUNTRY_NAMES if _is_cjk(n)), key=len, reverse=True))
