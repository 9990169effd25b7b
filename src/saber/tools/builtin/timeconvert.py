"""``convert_time``: a given wall-clock time in one place or zone, as the time in another.

"下午3点 北京 → 伦敦" is 07:00 in London in winter and 08:00 in summer: the offsets come from
zoneinfo for that very date, never from a fixed table. A bare time is on today's date in the
source place (the clock is injectable, for tests), and the answer says which date it took. A time
that does not exist in the source zone (skipped when the clocks go forward) is an error naming the
gap; one that occurs twice (the clocks go back) uses the first and says so. Places are resolved by
``places.PlaceResolver``, as for ``get_time``: an unknown place is an error naming it.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from saber.tools.base import Tool, tool
from saber.tools.builtin.clock import Clock, system_clock
from saber.tools.builtin.places import AmbiguousPlaceError, Place, PlaceResolver, UnknownPlaceError
from saber.tools.builtin.wallclock import ClockTimeError, find_clock_time, find_date
from saber.tools.errors import ToolArgumentError

_NAME = "convert_time"


def _offset(local: datetime) -> str:
    total = int((local.utcoffset() or timedelta(0)).total_seconds()) // 60
    sign = "-" if total < 0 else "+"
    return f"UTC{sign}{abs(total) // 60:02d}:{abs(total) % 60:02d}"


def _where(local: datetime, place: Place) -> str:
    """"Tokyo (东京), Japan (JST, Asia/Tokyo, UTC+09:00)", "Asia/Kolkata (IST, UTC+05:30)", "UTC"."""
    offset = _offset(local)
    zone = place.timezone or offset
    name = place.label if place.kind == "city" else zone
    details = [d for d in dict.fromkeys((local.tzname() or "", zone, offset))
               if d and d[0] not in "+-" and d != name and not (zone == "UTC" and d in ("UTC", "UTC+00:00"))]
    return f"{name} ({', '.join(details)})" if details else name


def _moment(local: datetime) -> str:
    return f"{local:%H:%M} on {local:%A}, {local:%Y-%m-%d}"


def _bad(message: str) -> ToolArgumentError:
    return ToolArgumentError(f"{_NAME}: {message}", tool=_NAME)


def source_datetime(time: str, date: str | None, place: Place, now: datetime) -> tuple[datetime, str]:
    """The aware local datetime ``time`` (on ``date``) names in ``place``, and a sentence saying
    how its date was chosen. Raises ToolArgumentError for a time or date that cannot be read, or
    that does not exist there."""
    tz = place.tz
    today = now.astimezone(tz).date()
    try:
        clock = find_clock_time(time)
        if clock is None:
            raise _bad(f"cannot read a time of day in {time!r} (write it as '15:00', '3 pm' or '下午3点')")
        written = find_date(date, today) if date and date.strip() else find_date(time[:clock.start] + time[clock.end:], today)
    except ClockTimeError as exc:
        raise _bad(str(exc)) from None
    if date and date.strip() and written is None:
        raise _bad(f"cannot read a date in {date!r} (write it as '2026-07-15', 'tomorrow' or '明天')")
    day = written.day if written is not None else today
    how = (f"the date {day:%Y-%m-%d} was given" if written is not None and not written.relative
           else f"the date is {written.text} in {place.name}: {day:%Y-%m-%d}" if written is not None
           else f"no date was given, so the date is today in {place.name}: {day:%Y-%m-%d}")
    naive = datetime(day.year, day.month, day.day, clock.hour, clock.minute)
    local = naive.replace(tzinfo=tz)
    back = local.astimezone(UTC).astimezone(tz)
    if back.replace(tzinfo=None) != naive:  # in the gap the clocks skip
        raise _bad(f"{clock.label} on {day:%Y-%m-%d} does not exist in {place.timezone}: the clocks go forward "
                   f"then (from {_offset(naive.replace(tzinfo=tz, fold=0))} to {_offset(naive.replace(tzinfo=tz, fold=1))})")
    if naive.replace(tzinfo=tz, fold=1).utcoffset() != local.utcoffset():
        how += (f"; {clock.label} occurs twice in {place.timezone} that day (the clocks go back): "
                f"the first, at {_offset(local)}, is used")
    return local, how


def describe_conversion(local: datetime, source: Place, target: Place, how: str) -> str:
    """One line: the given time where it was given, the same instant in the target place, the date rule."""
    there = local.astimezone(target.tz)
    shift = ""
    if there.date() != local.date():
        shift = " (the next day)" if there.date() > local.date() else " (the previous day)"
    return (f"{_moment(local)} in {_where(local, source)} is {_moment(there)}{shift} in {_where(there, target)}; "
            f"{how}. ISO 8601: {local.isoformat()} = {there.isoformat()}")


CONVERSION_LINE = re.compile(
    r"^(?P<from_time>\d{2}:\d{2}) on (?P<from_weekday>\w+), (?P<from_date>\d{4}-\d{2}-\d{2}) in (?P<source>.+?) "
    r"is (?P<to_time>\d{2}:\d{2}) on (?P<to_weekday>\w+), (?P<to_date>\d{4}-\d{2}-\d{2})(?: \([^)]*day\))? "
    r"in (?P<target>.+?); (?P<how>.+?)\. ISO 8601: \S+ = \S+$"
)
"""Reads back a ``describe_conversion`` line (answers rendered without a model use it)."""


def make_convert_time_tool(*, clock: Clock = system_clock, resolver: PlaceResolver | None = None) -> Tool:
    """The ``convert_time`` tool; ``clock`` fixes "today" in tests, ``resolver`` looks places up."""
    places = resolver or PlaceResolver()

    @tool(name=_NAME)
    async def convert_time(time: str, from_timezone: str, to_timezone: str, date: str | None = None) -> str:
        """Convert a given wall-clock time from one place or time zone to another (DST-correct for that date).

        Args:
            time: The time to convert: "15:00", "3 pm", "9:30am", "下午3点", "上午9点半".
            from_timezone: Where that time is: IANA zone ("Asia/Shanghai"), UTC offset ("UTC+8") or place ("Beijing", "北京").
            to_timezone: Where to express it: IANA zone, UTC offset or place ("London", "伦敦", "Asia/Kolkata").
            date: The date of the time in the source place: "2026-07-15", "tomorrow", "明天"; default today there.
        """
        try:
            source = await places.resolve(from_timezone)
            target = await places.resolve(to_timezone)
            local, how = source_datetime(time, date, source, clock())
            return describe_conversion(local, source, target, how)
        except AmbiguousPlaceError as exc:
            raise AmbiguousPlaceError(exc.place, exc.zones, tool=_NAME) from None
        except UnknownPlaceError as exc:
            raise UnknownPlaceError(exc.place, str(exc).split(": ", 1)[-1], tool=_NAME) from None

    return convert_time
