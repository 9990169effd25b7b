"""``get_time``: the current local time in an IANA zone, a UTC offset or any place.

(Named ``clock`` rather than ``time`` so ``from saber.tools.builtin import time`` never hides
the standard library module.) Places are resolved by ``places.PlaceResolver``: zone forms and the
built-in table offline, anything else through the geocoder. A place nothing resolves is an error
naming it; the configured default zone is used only when no place is given at all.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo

from saber.cities import City
from saber.tools.base import Tool, tool
from saber.tools.builtin.places import (
    AmbiguousPlaceError,
    Place,
    PlaceResolver,
    UnknownPlaceError,
    ambiguous_zones,
    reject_offline,
    resolve_offline,
)
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


def resolve_timezone(text: str, *, default: str = "Asia/Shanghai") -> ResolvedZone:
    """Read a zone offline from what a user or model wrote: an IANA name in any case, "UTC"/"GMT",
    offsets ("UTC+8", "gmt-05:30", "东八区") and the built-in table's cities ("New York", "东京",
    "北京时间"). Raises ToolArgumentError naming the text when none of these fits (places outside
    the table need the geocoder: use ``PlaceResolver``)."""
    raw = (text or "").strip() or default
    try:
        place = resolve_offline(raw)
        if place is None:
            reject_offline(raw)
            if choices := ambiguous_zones(raw):
                raise AmbiguousPlaceError(raw, choices)
            raise UnknownPlaceError(raw)
    except UnknownPlaceError as exc:
        raise ToolArgumentError(f"get_time: {exc}", tool="get_time") from None
    from saber.cities import lookup_city

    city = lookup_city(place.name) if place.kind == "city" else None
    return ResolvedZone(tz=place.tz, zone=place.timezone or "UTC", city=city)


def _offset_text(local: datetime) -> str:
    total = int((local.utcoffset() or timedelta(0)).total_seconds()) // 60
    sign = "-" if total < 0 else "+"
    return f"UTC{sign}{abs(total) // 60:02d}:{abs(total) % 60:02d}"


def describe_time(now: datetime, place: Place) -> str:
    """One line: place, weekday, date, time, zone and offset, then the ISO timestamp."""
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    local = now.astimezone(place.tz).replace(microsecond=0)
    offset_text = _offset_text(local)
    zone = place.timezone or offset_text
    abbreviation = local.tzname() or ""
    details = [zone] if zone == offset_text or (zone == "UTC" and offset_text == "UTC+00:00") else [zone, offset_text]
    if abbreviation and abbreviation[0] not in "+-" and abbreviation not in (zone, offset_text):
        details.insert(0, abbreviation)
    where = place.label if place.kind == "city" else zone
    return (f"Current time in {where}: {local:%A}, {local:%Y-%m-%d} {local:%H:%M:%S} "
            f"({', '.join(details)}); ISO 8601: {local.isoformat()}")


TIME_LINE = re.compile(
    r"^Current time in (?P<place>.+?): (?P<weekday>\w+), (?P<date>\d{4}-\d{2}-\d{2}) (?P<time>\d{2}:\d{2}):\d{2} "
    r"\((?P<details>[^)]*)\); ISO 8601: (?P<iso>\S+)$"
)
"""Reads back a ``describe_time`` line (answers rendered without a model use it)."""


def make_time_tool(*, default_timezone: str = "Asia/Shanghai", clock: Clock = system_clock,
                   resolver: PlaceResolver | None = None) -> Tool:
    """The ``get_time`` tool. ``clock`` is injectable so tests can fix "now"; ``resolver`` looks
    places up (one without a geocoder URL cannot resolve places outside the table)."""
    try:  # a bad default fails here, at start-up, not on first use
        resolve_timezone(default_timezone)
    except ToolArgumentError as exc:
        raise ValueError(f"default_timezone: {exc}") from None
    places = resolver or PlaceResolver()

    @tool
    async def get_time(timezone: str = default_timezone) -> str:
        """Current local date, time and weekday in a timezone or place.

        Args:
            timezone: IANA zone ("Asia/Tokyo"), UTC offset ("UTC+8", "UTC+5:30") or any place name ("New York", "东京", "Reykjavik").
        """
        text = (timezone or "").strip() or default_timezone
        try:
            place = await places.resolve(text)
            return describe_time(clock(), place)  # a geocoded place without a zone raises, never guesses
        except AmbiguousPlaceError as exc:
            raise AmbiguousPlaceError(exc.place, exc.zones, tool="get_time") from None
        except UnknownPlaceError as exc:
            raise UnknownPlaceError(exc.place, str(exc).split(": ", 1)[-1], tool="get_time") from None

    return get_time
