"""Finding the places a request names: cities of the table, time zones, and other place names.

``place_mentions("东京和纽约现在几点")`` → ``["东京", "纽约"]``; ``place_mentions("time in UTC+5:30
and in Reykjavik")`` → ``["UTC+5:30", "Reykjavik"]``. Each mention is returned as written, in the
order of the text, once. Names outside the table are found only where a request puts a place: after
"in/for/at" (capitalised, English) or right before a Chinese weather or time word (a Chinese name,
or a capitalised Latin one: "Gotham 天气"), so ordinary
words are not taken for places. Linear in the text and bounded to its first ``SCAN_LIMIT``
characters; these are the candidates, ``places.PlaceResolver`` decides what they are.
"""

from __future__ import annotations

import re

from saber.cities import SCAN_LIMIT, city_mentions
from saber.language import NOT_TIME_AFTER
from saber.zonenames import loaded_zone_names

_ZONE = re.compile(
    r"(?<![A-Za-z0-9/])(?:"
    r"(?:Africa|America|Antarctica|Asia|Atlantic|Australia|Europe|Indian|Pacific|Etc)/[A-Za-z_+\-]+(?:/[A-Za-z_+\-]+)?"
    r"|(?:UTC|GMT)(?:\s?[+-]\s?\d{1,2}(?::?\d{2})?)?(?![A-Za-z0-9])"
    r"|[东西](?:十[一二]?|[一二三四五六七八九])区"
    r")",
    re.IGNORECASE,
)
_LETTER = r"[^\W\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]"
"""A word character that is not CJK: "CST几点" is the name "CST" before a Chinese word."""
_WORD = rf"[A-Z](?:{_LETTER}|['’.\-])*(?<![.'’])"
_NAME = rf"{_WORD}(?:[ \-]{_WORD}){{0,3}}"
_EN_PLACE = re.compile(
    rf"\b(?:in|for|at|of)\s+(?:the\s+)?(?P<first>{_NAME}(?:,\s*{_NAME})?)"
    rf"(?P<rest>(?:(?:\s*,\s*|\s+and\s+(?:in\s+)?|\s*&\s*){_NAME})*)"
)
_EN_LEAD = re.compile(rf"^\s*(?P<first>{_NAME})(?P<rest>(?:(?:\s*,\s*|\s+and\s+){_NAME})*)\s*:?\s+(?:weather|time|current|local|forecast)\b")
_EN_NOT_PLACES = frozenset({
    "i", "the", "what", "whats", "what's", "is", "it", "weather", "time", "tell", "me", "please", "current", "local",
    "today", "tomorrow", "now", "celsius", "fahrenheit", "english", "chinese", "compare", "and", "check", "show",
    "how", "hows", "how's", "will", "does", "do", "can", "could", "should", "give", "get", "find", "look", "search",
})
_US_STATES_AND_COUNTRIES = frozenset(s.casefold() for s in (
    "Alabama", "Alaska", "Arizona", "Arkansas", "California", "Colorado", "Connecticut", "Delaware", "Florida",
    "Georgia", "Hawaii", "Idaho", "Illinois", "Indiana", "Iowa", "Kansas", "Kentucky", "Louisiana", "Maine",
    "Maryland", "Massachusetts", "Michigan", "Minnesota", "Mississippi", "Missouri", "Montana", "Nebraska",
    "Nevada", "New Hampshire", "New Jersey", "New Mexico", "New York", "North Carolina", "North Dakota", "Ohio",
    "Oklahoma", "Oregon", "Pennsylvania", "Rhode Island", "South Carolina", "South Dakota", "Tennessee", "Texas",
    "Utah", "Vermont", "Virginia", "Washington", "West Virginia", "Wisconsin", "Wyoming", "USA", "US", "UK",
    "England", "Scotland", "Wales", "Canada", "Australia", "Germany", "France", "Italy", "Spain", "Japan", "China",
    "India", "Brazil", "Mexico", "Norway", "Sweden", "Iceland", "Ireland", "New Zealand", "Peru", "Chile",
    "Argentina", "Thailand", "Vietnam", "Greenland", "Austria", "Switzerland", "Portugal", "Georgia", "Rwanda",
    "Ontario", "Quebec", "British Columbia", "Tasmania", "Queensland", "Victoria",
))
"""What may follow a comma as a qualifier ("Boulder, Colorado") rather than a second place."""

_ZH_KEYS = re.compile(r"的?(?:天气|气温|温度|会下|下雨|下雪|冷不冷|热不热|更冷|更热|现在|今天|此刻|当地|时间|几点|星期|日期)")
_ZH_RUN = re.compile(r"[\u4e00-\u9fff]{2,12}$")
_ZH_AFTER_LATIN = re.compile(rf"(?<!{_LETTER})(?<![.'’\-])(?P<name>{_NAME})\s*(?=的?(?:天气|气温|温度|会下|下雨|下雪|冷不冷|热不热|时间(?!{NOT_TIME_AFTER})|几点|现在几点|现在的时间))")
"""A capitalised Latin name right before a Chinese weather or time word ("Gotham 天气")."""
_ZH_LEAD = re.compile(r"^(?:请问|请|帮我|麻烦|然后|接着|再查|再看|再|查一下|查查|查询|查(?=那|这)|告诉我|我想知道|想知道|看看|看一下|比较一下|比较|对比|现在|今天|明天|那么|还有|以及|和|与|跟)+")
_ZH_SPLIT = re.compile(r"[和与跟及、，,]")
_ZH_NOT_PLACES = frozenset({
    "今天", "现在", "明天", "昨天", "后天", "此刻", "目前", "当前", "那边", "这里", "那里", "外面", "当地", "本地", "我们",
    "我这", "我这里", "家里", "你", "我", "他们", "这边", "一下", "什么", "哪里", "哪个", "今日", "最近", "周末", "早上",
    "晚上", "中午", "下午", "上午", "北京时间", "世界", "全球", "各地", "城市", "这个", "那个", "同一", "查一下", "帮我查",
    "告诉我", "今年", "本周", "下周", "国内", "国外", "家乡", "老家", "比较", "对比",
})


def _add(found: list[tuple[int, str]], seen: set[str], start: int, text: str) -> None:
    key = text.casefold()
    if key and key not in seen:
        seen.add(key)
        found.append((start, text))


def _mask(text: str, spans: list[tuple[int, int]]) -> str:
    chars = list(text)
    for a, b in spans:
        chars[a:b] = " " * (b - a)
    return "".join(chars)


def _english(text: str, found: list[tuple[int, str]], seen: set[str]) -> None:
    for pattern in (_EN_PLACE, _EN_LEAD):
        for m in pattern.finditer(text):
            first = m.group("first")
            head, _, qualifier = first.partition(",")
            if qualifier and qualifier.strip().casefold() not in _US_STATES_AND_COUNTRIES:
                names = [head, qualifier]
            else:
                names = [first]
            names += re.split(r"\s*,\s*|\s+and\s+(?:in\s+)?|\s*&\s*", m.group("rest"))
            for name in names:
                name = name.strip(" ,")
                if name and name.casefold() not in _EN_NOT_PLACES and name.split()[0].casefold() not in _EN_NOT_PLACES:
                    _add(found, seen, m.start("first") + max(0, text.find(name, m.start("first")) - m.start("first")), name)


def _parts(run: str) -> list[str]:
    """``run`` split at "和", "与", "、", commas…, except inside a name CLDR knows ("温得和克",
    "圣多美和普林西比"), once its index is loaded (``places.warm_offline`` loads it for a turn)."""
    names = loaded_zone_names()
    out: list[str] = []
    for segment in re.split(r"[、，,]", run):
        bare = re.sub(r"(?:的|现在|今天|明天|此刻|当地)+$", "", _ZH_LEAD.sub("", segment))
        if names is not None and bare and names.cities(bare):
            out.append(bare)
        else:
            out.extend(_ZH_SPLIT.split(segment))
    return out


def _chinese(text: str, found: list[tuple[int, str]], seen: set[str]) -> None:
    for m in _ZH_AFTER_LATIN.finditer(text):
        name = m.group("name")
        if name.casefold() not in _EN_NOT_PLACES and name.split()[0].casefold() not in _EN_NOT_PLACES:
            _add(found, seen, m.start("name"), name)
    for m in _ZH_KEYS.finditer(text):
        before = _ZH_RUN.search(text, max(0, m.start() - 12), m.start())
        if before is None:
            continue
        run = _ZH_LEAD.sub("", before.group(0))
        offset = before.end() - len(run)
        for part in _parts(_ZH_KEYS.sub("，", run)):
            part = re.sub(r"(?:的|现在|今天|明天|此刻|当地|各是|分别是|分别|各|都是|都)+$", "", part)
            part = _ZH_LEAD.sub("", part)
            if 2 <= len(part) <= 8 and part not in _ZH_NOT_PLACES and not _ZH_KEYS.fullmatch(part):
                _add(found, seen, offset + max(0, run.find(part)), part)


def place_mentions(query: str, *, limit: int = 8) -> list[str]:
    """The places ``query`` names, as written, in order, each once (at most ``limit``)."""
    text = query[:SCAN_LIMIT]
    found: list[tuple[int, str]] = []
    seen: set[str] = set()
    spans: list[tuple[int, int]] = []
    for m in _ZONE.finditer(text):  # an offset out of range is still what the user named: the tool says why
        _add(found, seen, m.start(), m.group(0))
        spans.append(m.span())
    masked = _mask(text, spans)
    city_keys: set[str] = set()
    for start, end, city in city_mentions(masked, limit=limit * 2):
        spans.append((start, end))
        if city.name not in city_keys:
            city_keys.add(city.name)
            _add(found, seen, start, text[start:end])
    masked = _mask(text, spans)
    _english(masked, found, seen)
    _chinese(masked, found, seen)
    found.sort(key=lambda item: item[0])
    return [name for _, name in found[:limit]]


def is_zone_form(text: str) -> bool:
    """True for "UTC", "GMT+8", "东八区", "Europe/Berlin": a time zone, not a place with weather."""
    m = _ZONE.fullmatch(text.strip())
    return m is not None
