"""Reading a wall-clock time and a date as people write them, in Chinese and English.

``find_clock_time("把北京时间下午3点换算成伦敦时间")`` finds "下午3点" (15:00); so do "3 pm", "3:30pm",
"15:00", "9点半", "上午九点一刻", "noon" and "midnight". ``parse_date`` reads "2026-07-15",
"7月15日", "July 15", "today", "明天"... against a given today. The time-conversion tool and the
rules that recognise a conversion question both read times with these.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_CN_NUM = r"[零〇一二两三四五六七八九十]{1,3}"
_PERIOD = r"凌晨|清晨|早上|早晨|上午|中午|正午|下午|傍晚|晚上|夜里|夜间|半夜"
_ZH_TIME = re.compile(
    rf"(?:(?P<period>{_PERIOD})\s*)?(?<![0-9A-Za-z:.+\-])(?P<hour>\d{{1,2}}|{_CN_NUM})\s*(?:"
    rf"[:：]\s*(?P<colon>\d{{2}})"
    rf"|[点點时](?:\s*(?:(?P<half>半)|(?P<quarter>一刻)|(?P<three>三刻)|(?P<minute>\d{{1,2}}|{_CN_NUM})\s*分?))?"
    r")"
)
_EN_TIME = re.compile(
    r"(?<![\w:.+\-])(?P<hour>\d{1,2})(?:[:.](?P<minute>\d{2}))?\s*(?P<ampm>[ap])\.?\s?m\b\.?"
    r"|(?<![\w:.+\-])(?P<hour24>\d{1,2}):(?P<minute24>\d{2})(?![\d:])(?:\s*(?:h|hrs|hours)\b)?"
    r"|\b(?P<word>noon|midday|midnight)\b",
    re.IGNORECASE,
)
_AFTERNOON = frozenset({"下午", "傍晚", "晚上", "夜里", "夜间"})


class ClockTimeError(ValueError):
    """A time written in a form that names no valid wall-clock time ("25点", "13 pm")."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ClockTime:
    """A wall-clock time found in a text, and where."""

    hour: int
    minute: int
    text: str
    """As written ("下午3点", "3 pm")."""
    start: int
    end: int

    @property
    def label(self) -> str:
        return f"{self.hour:02d}:{self.minute:02d}"


def cn_number(text: str) -> int:
    """"3" → 3, "十二" → 12, "二十三" → 23, "四十五" → 45, "两" → 2."""
    if text.isdigit():
        return int(text)
    if "十" not in text:
        value = 0
        for ch in text:
            value = value * 10 + _CN_DIGITS[ch]
        return value
    tens, _, ones = text.partition("十")
    return (_CN_DIGITS[tens] if tens else 1) * 10 + (_CN_DIGITS[ones] if ones else 0)


def _zh(m: re.Match[str]) -> tuple[int, int]:
    hour = cn_number(m.group("hour"))
    if m.group("colon"):
        minute = int(m.group("colon"))
    elif m.group("half"):
        minute = 30
    elif m.group("quarter"):
        minute = 15
    elif m.group("three"):
        minute = 45
    else:
        minute = cn_number(m.group("minute")) if m.group("minute") else 0
    period = m.group("period")
    if hour > 12 and period:
        pass  # "下午15点": the hour already says it
    elif period in _AFTERNOON and hour < 12 or period in ("中午", "正午") and 1 <= hour <= 5:
        hour += 12
    elif period in ("凌晨", "半夜") and hour == 12:
        hour = 0
    return hour, minute


def _en(m: re.Match[str]) -> tuple[int, int]:
    if m.group("word"):
        return (0, 0) if m.group("word").lower() == "midnight" else (12, 0)
    if m.group("hour24"):
        return int(m.group("hour24")), int(m.group("minute24"))
    hour, minute = int(m.group("hour")), int(m.group("minute") or 0)
    if not 1 <= hour <= 12:
        raise ClockTimeError(f"{m.group(0).strip()!r} is not a time: with am/pm the hour is 1 to 12")
    pm = m.group("ampm").lower() == "p"
    return (hour % 12) + (12 if pm else 0), minute


def find_clock_time(text: str) -> ClockTime | None:
    """The first wall-clock time written in ``text`` (the earliest of a Chinese and an English
    form), or None. Raises ClockTimeError for a time-shaped text that is no valid time ("25:00")."""
    found = [m for m in (_ZH_TIME.search(text), _EN_TIME.search(text)) if m is not None]
    if not found:
        return None
    m = min(found, key=lambda x: (x.start(), -len(x.group(0))))  # "9:30 pm" over "9:30"
    hour, minute = _zh(m) if m.re is _ZH_TIME else _en(m)
    if not (0 <= hour <= 23 and 0 <= minute <= 59):
        raise ClockTimeError(f"{m.group(0).strip()!r} is not a time of day (hours 0-23, minutes 0-59)")
    return ClockTime(hour=hour, minute=minute, text=m.group(0).strip(), start=m.start(), end=m.end())


_RELATIVE = {"today": 0, "tonight": 0, "this morning": 0, "this afternoon": 0, "this evening": 0, "tomorrow": 1,
             "yesterday": -1, "day after tomorrow": 2, "the day after tomorrow": 2, "今天": 0, "今日": 0, "今晚": 0,
             "明天": 1, "明日": 1, "明早": 1, "明晚": 1, "后天": 2, "昨天": -1, "昨日": -1, "前天": -2}
_MONTHS = {name: i + 1 for i, names in enumerate((
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
    ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
    ("december", "dec"))) for name in names}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DATE = re.compile(
    r"(?P<iso>(?P<y>\d{4})-(?P<mo>\d{1,2})-(?P<d>\d{1,2}))"
    r"|(?:(?P<zy>\d{4})\s*年\s*)?(?P<zm>\d{1,2})\s*月\s*(?P<zd>\d{1,2})\s*[日号]"
    rf"|\b(?P<em>{_MONTH})\.?\s+(?P<ed>\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(?P<ey>\d{{4}}))?\b"
    rf"|\b(?P<ed2>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<em2>{_MONTH})\.?(?:,?\s+(?P<ey2>\d{{4}}))?\b"
    rf"|(?P<rel>{'|'.join(sorted((re.escape(k) for k in _RELATIVE), key=len, reverse=True))})",
    re.IGNORECASE,
)


@dataclass(frozen=True, kw_only=True, slots=True)
class DateMention:
    day: date
    text: str
    relative: bool
    """Read against today ("tomorrow", "明天") rather than written out."""


def find_date(text: str, today: date) -> DateMention | None:
    """The first date written in ``text``, read against ``today`` (a date without a year is in
    today's year). Raises ClockTimeError for a written date that does not exist ("2026-02-30")."""
    m = _DATE.search(text)
    if m is None:
        return None
    written = m.group(0)
    if m.group("rel"):
        return DateMention(day=today + timedelta(days=_RELATIVE[m.group("rel").lower()]), text=written, relative=True)
    if m.group("iso"):
        parts = (m.group("y"), m.group("mo"), m.group("d"))
    elif m.group("zm"):
        parts = (m.group("zy") or str(today.year), m.group("zm"), m.group("zd"))
    elif m.group("em"):
        parts = (m.group("ey") or str(today.year), str(_MONTHS[m.group("em").lower()]), m.group("ed"))
    else:
        parts = (m.group("ey2") or str(today.year), str(_MONTHS[m.group("em2").lower()]), m.group("ed2"))
    try:
        day = date(int(parts[0]), int(parts[1]), int(parts[2]))
    except ValueError:
        raise ClockTimeError(f"{written!r} is not a date that exists") from None
    return DateMention(day=day, text=written, relative=False)
