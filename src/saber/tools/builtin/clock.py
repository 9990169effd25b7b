"""``get_time``: the current local time in an IANA zone, a UTC offset or a known city.

(Named ``clock`` rather than ``time`` so ``from saber.tools.builtin import time`` never hides
the standard library module.)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from datetime import timezone as fixed_offset
from functools import cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from saber.tools.base import Tool, tool
from saber.tools.builtin.cities import City, find_city, lookup_city
from saber.tools.errors import ToolArgumentError

Clock = Callable[[], datetime]
"""Returns "now" as an aware datetime (a naive one is read as UTC)."""


def system_clock() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, kw_only=True, slots=True)
class ResolvedZone:
    tz: tzinfo
    zone: str
    """IANA name ("Asia/Tokyo") or a fixed offset ("UTC+08:00")."""
    city: City | None = None


_OFFSET = re.compile(r"^(?:utc|gmt)?\s*([+-])\s*(\d{1,2})(?:(?::|\s*)(\d{2}))?(?:\s*(?:h|hours?))?$")
_UTC_NAMES = frozenset({"utc", "gmt", "z", "zulu", "协调世界时", "世界时", "格林尼治时间", "格林威治时间"})
_CN_NUMBERS = {"零": 0, "一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9,
               "十": 10, "十一": 11, "十二": 12}
_CN_ZONE = re.compile(r"^(东|西)(十[一二]?|[一二三四五六七八九])区$")


@cache
def _zones_by_folded_name() -> dict[str, str]:
    return {name.casefold(): name for name in available_timezones()}


def _fixed(sign: str, hours: int, minutes: int, text: str) -> ResolvedZone:
    if hours > 14 or minutes >= 60 or (hours == 14 and minutes):
        raise ToolArgumentError(f"get_time: UTC offset out of range in {text!r} (allowed -14:00 to +14:00)",
                                tool="get_time")
    delta = timedelta(hours=hours, minutes=minutes) * (-1 if sign == "-" else 1)
    label = "UTC" if not delta else f"UTC{sign}{hours:02d}:{minutes:02d}"
    return ResolvedZone(tz=fixed_offset(delta, label), zone=label)


def resolve_timezone(text: str, *, default: str = "Asia/Shanghai") -> ResolvedZone:
    """Read a zone from what a user or model wrote.

    Accepts an IANA name in any case ("asia/tokyo"), "UTC"/"GMT", offsets ("UTC+8", "gmt-05:30",
    "+0530", "东八区"), and city names in English or Chinese ("New York", "东京", "北京时间").
    Raises ToolArgumentError naming the text when none of these fits.
    """
    raw = (text or "").strip()
    if not raw:
        raw = default
    folded = " ".join(raw.casefold().split())
    if folded in _UTC_NAMES:
        return ResolvedZone(tz=UTC, zone="UTC")
    if m := _OFFSET.match(folded):
        return _fixed(m.group(1), int(m.group(2)), int(m.group(3) or 0), raw)
    if m := _CN_ZONE.match(folded):
        return _fixed("+" if m.group(1) == "东" else "-", _CN_NUMBERS[m.group(2)], 0, raw)
    city = lookup_city(raw)
    if city is not None:
        return ResolvedZone(tz=ZoneInfo(city.timezone), zone=city.timezone, city=city)
    iana = _zones_by_folded_name().get(folded.replace(" ", "_"))
    if iana is not None:
        try:
            return ResolvedZone(tz=ZoneInfo(iana), zone=iana)
        except (ZoneInfoNotFoundError, ValueError):  # listed but unreadable: fall through to cities
            pass
    city = find_city(raw)
    if city is not None:
        return ResolvedZone(tz=ZoneInfo(city.timezone), zone=city.timezone, city=city)
    raise ToolArgumentError(
        f"get_time: unknown timezone or city {raw!r}; use an IANA name such as 'Asia/Tokyo', an offset "
        "such as 'UTC+8', or a city name such as 'Tokyo' or '东京'",
        tool="get_time",
    )


def describe_time(now: datetime, resolved: ResolvedZone) -> str:
    """One line: place, weekday, date, time, zone and offset, then the ISO timestamp."""
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    local = now.astimezone(resolved.tz).replace(microsecond=0)
    offset = local.utcoffset() or timedelta(0)
    total = int(offset.total_seconds()) // 60
    sign = "-" if total < 0 else "+"
    offset_text = f"UTC{sign}{abs(total) // 60:02d}:{abs(total) % 60:02d}"
    abbreviation = local.tzname() or ""
    zone = resolved.zone
    details = [zone] if zone == offset_text else [zone, offset_text]
    if abbreviation and abbreviation[0] not in "+-" and abbreviation not in (zone, offset_text):
        details.insert(0, abbreviation)
    place = f"{resolved.city.name} ({resolved.city.name_zh})" if resolved.city and resolved.city.name_zh else (
        resolved.city.name if resolved.city else zone)
    return (f"Current time in {place}: {local:%A}, {local:%Y-%m-%d} {local:%H:%M:%S} "
            f"({', '.join(details)}); ISO 8601: {local.isoformat()}")


def make_time_tool(*, default_timezone: str = "Asia/Shanghai", clock: Clock = system_clock) -> Tool:
    """The ``get_time`` tool. ``clock`` is injectable so tests can fix "now"."""
    try:  # a bad default fails here, at start-up, not on first use
        resolve_timezone(default_timezone)
    except ToolArgumentError as exc:
        raise ValueError(f"default_timezone: {exc}") from None

    @tool
    def get_time(timezone: str = default_timezone) -> str:
        """Current local date, time and weekday in a timezone or city.

        Args:
            timezone: IANA zone ("Asia/Tokyo"), UTC offset ("UTC+8") or city name ("New York", "东京").
        """
        return describe_time(clock(), resolve_timezone(timezone, default=default_timezone))

    return get_time
