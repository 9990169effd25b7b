"""Resolving a place a user or model named: the built-in table, a time zone form, CLDR's names,
then the geocoder.

Order: the built-in city table (``cities``, with coordinates); "UTC"/"GMT", offsets ("GMT+8",
"UTC+5:30", "东八区") and IANA names ("Europe/Berlin"); then every zone's exemplar city in every
locale Babel ships ("霍巴特", "Reykjavik", ``saber.zonenames``) and time zone abbreviations
("JST", "CET"), all offline, also with "时间" / " time" after them; then Open-Meteo's geocoder,
which returns coordinates and the place's time zone. A name or abbreviation that stands for
several clocks ("Salvador", "CST", "IST") raises ``AmbiguousPlaceError`` naming them, and the
geocoder is not asked to guess. Answers (found or not) are cached per resolver. A name that
nothing resolves raises ``UnknownPlaceError`` naming it: there is never a silent default. When the
geocoder cannot be reached the error says so (retryable), and still names the place.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, timedelta, tzinfo
from datetime import timezone as fixed_offset
from functools import cache
from typing import TYPE_CHECKING, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pydantic import BaseModel, ValidationError

from saber.cities import City, find_city, lookup_city
from saber.language import has_han
from saber.tools.builtin._http import make_client, request_json
from saber.tools.errors import ToolArgumentError, ToolError
from saber.zonenames import load_zone_names, zone_names

if TYPE_CHECKING:
    import httpx

DEFAULT_GEOCODING_URL = "https://geocoding-api.open-meteo.com/v1/search"
_SERVICE = "geocoding service (Open-Meteo)"


class UnknownPlaceError(ToolArgumentError):
    """No place by this name exists as far as the table and the geocoder know (never retryable)."""

    def __init__(self, place: str, detail: str = "", *, tool: str | None = None) -> None:
        prefix = f"{tool}: " if tool else ""
        super().__init__(f"{prefix}unknown place {place!r}: {detail or 'no city, time zone or place by that name was found'}",
                         tool=tool)
        self.place = place


class AmbiguousPlaceError(UnknownPlaceError):
    """A name or abbreviation that several clocks go by; the message names each (never retryable)."""

    def __init__(self, place: str, zones: tuple[str, ...], *, tool: str | None = None) -> None:
        choices = " or ".join(f"{_zone_label(z)} ({z}, {_offset_now(z)})" for z in zones)
        prefix = f"{tool}: " if tool else ""
        ToolArgumentError.__init__(self, f"{prefix}ambiguous place {place!r}: it may mean {choices}; say which",
                                   tool=tool)
        self.place = place
        self.zones = zones


def _zone_label(zone: str) -> str:
    label = zone_names().label(zone)
    return ", ".join(dict.fromkeys(p for p in (label.name, label.country) if p))


def _offset_now(zone: str) -> str:
    from datetime import datetime

    offset = datetime.now(ZoneInfo(zone)).utcoffset() or timedelta(0)
    minutes = int(offset.total_seconds()) // 60
    return _offset_label("-" if minutes < 0 else "+", abs(minutes) // 60, abs(minutes) % 60)


@dataclass(frozen=True, kw_only=True, slots=True)
class Place:
    """A resolved place (a city with coordinates) or a bare time zone (no coordinates)."""

    name: str
    """How answers name it ("Tokyo", "Reykjavík", "UTC+05:30", "Europe/Berlin")."""
    timezone: str | None
    """IANA name, or a fixed offset label ("UTC", "UTC+05:30"); None when the geocoder gave none."""
    kind: Literal["city", "zone"]
    source: Literal["table", "geocoder", "zone", "cldr"]
    name_zh: str | None = None
    country: str | None = None
    region: str | None = None
    latitude: float | None = None
    longitude: float | None = None

    @property
    def tz(self) -> tzinfo:
        if self.timezone is None:
            raise UnknownPlaceError(self.name, "the geocoder gave no time zone for it")
        return zone_info(self.timezone)

    @property
    def label(self) -> str:
        """"Tokyo (东京), Japan", "Boulder, Colorado, United States", "UTC+05:30"."""
        head = f"{self.name} ({self.name_zh})" if self.name_zh and self.name_zh != self.name else self.name
        return ", ".join(dict.fromkeys(p for p in (head, self.region, self.country) if p))


def city_place(city: City) -> Place:
    return Place(name=city.name, name_zh=city.name_zh, timezone=city.timezone, kind="city", source="table",
                 country=city.country, latitude=city.latitude, longitude=city.longitude)


# -- time zone forms, offline ---------------------------------------------------------------------

_OFFSET = re.compile(r"^(?:utc|gmt)?\s*([+-])\s*(\d{1,2})(?:(?::|\s*)(\d{2}))?(?:\s*(?:h|hours?))?$")
_UTC_NAMES = frozenset({"utc", "gmt", "z", "zulu", "utc+0", "gmt+0", "utc-0", "gmt-0", "utc 0",
                        "协调世界时", "世界时", "格林尼治时间", "格林威治时间"})
_CN_NUMBERS = {"一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9,
               "十": 10, "十一": 11, "十二": 12}
_CN_ZONE = re.compile(r"^(东|西)(十[一二]?|[一二三四五六七八九])区$")


@cache
def _zones_by_folded_name() -> dict[str, str]:
    return {name.casefold(): name for name in available_timezones()}


def _offset_label(sign: str, hours: int, minutes: int) -> str:
    return "UTC" if not hours and not minutes else f"UTC{sign}{hours:02d}:{minutes:02d}"


def zone_info(name: str) -> tzinfo:
    """The tzinfo for an IANA name or an offset label made by ``parse_zone``."""
    if name == "UTC":
        return UTC
    if m := re.fullmatch(r"UTC([+-])(\d{2}):(\d{2})", name):
        delta = timedelta(hours=int(m.group(2)), minutes=int(m.group(3)))
        return fixed_offset(-delta if m.group(1) == "-" else delta, name)
    return ZoneInfo(name)


def parse_zone(text: str) -> Place | None:
    """A time zone written as "UTC", "GMT+8", "UTC+5:30", "+0530", "东八区" or an IANA name; None otherwise.

    Raises UnknownPlaceError for an offset outside -14:00..+14:00.
    """
    raw = " ".join(text.split())
    folded = raw.casefold()
    if folded in _UTC_NAMES:
        return Place(name="UTC", timezone="UTC", kind="zone", source="zone")
    sign, hours, minutes = "", 0, 0
    if m := _OFFSET.match(folded):
        sign, hours, minutes = m.group(1), int(m.group(2)), int(m.group(3) or 0)
    elif m := _CN_ZONE.match(folded):
        sign, hours = ("+" if m.group(1) == "东" else "-"), _CN_NUMBERS[m.group(2)]
    if sign:
        if hours > 14 or minutes >= 60 or (hours == 14 and minutes):
            raise UnknownPlaceError(raw, "UTC offset out of range (allowed -14:00 to +14:00)")
        label = _offset_label(sign, hours, minutes)
        return Place(name=label, timezone=label, kind="zone", source="zone")
    iana = _zones_by_folded_name().get(folded.replace(" ", "_")) if "/" in folded or folded.isalpha() else None
    if iana is not None:
        try:
            ZoneInfo(iana)
        except (ZoneInfoNotFoundError, ValueError):
            return None
        return Place(name=iana, timezone=iana, kind="zone", source="zone")
    return None


_CN_ZONE_ANY = re.compile(r"^[东西][零一二三四五六七八九十\d]+区$")
MAX_PLACE_CHARS = 120


def reject_offline(raw: str) -> None:
    """Raise UnknownPlaceError for what cannot be a place name at all, without asking anyone:
    a path-like name that is no IANA zone, a zone number out of range, an over-long text."""
    if len(raw) > MAX_PLACE_CHARS:
        raise UnknownPlaceError(raw[:40] + "…", f"longer than {MAX_PLACE_CHARS} characters, not a place name")
    if "/" in raw or "\\" in raw:
        raise UnknownPlaceError(raw, "not an IANA time zone (such as 'Asia/Tokyo')")
    if _CN_ZONE_ANY.match(raw) or re.fullmatch(r"(?i)(?:utc|gmt)\s*[+-].*", raw):
        raise UnknownPlaceError(raw, "not a valid UTC offset (allowed -14:00 to +14:00)")


_TIME_WORD = re.compile(r"(?i)(?:\s*的?时间|\s+time)$")


def _forms(raw: str) -> tuple[str, ...]:
    """``raw``, and without a trailing "时间" / "的时间" / " time" ("Reykjavik time")."""
    bare = _TIME_WORD.sub("", raw).strip()
    return (raw, bare) if bare and bare != raw else (raw,)


def _cldr_zones(raw: str) -> tuple[tuple[str, ...], str | None]:
    """The zones CLDR's city names or the abbreviations give ``raw`` (or its bare form), and the
    abbreviation when it is one."""
    names = zone_names()
    for form in _forms(raw):
        if found := names.cities(form):
            return found, None
        if found := names.abbreviation(form):
            return found, form.upper()
    return (), None


def cldr_place(zone: str, *, abbreviation: str | None = None) -> Place:
    """A zone's exemplar city ("Hobart (霍巴特), Australia"), or for an abbreviation the zone."""
    if abbreviation is not None:
        return Place(name=f"{abbreviation} ({zone})", timezone=zone, kind="zone", source="cldr")
    label = zone_names().label(zone)
    return Place(name=label.name, name_zh=label.name_zh, country=label.country, timezone=zone, kind="city",
                 source="cldr")


def resolve_offline(text: str, *, zones: bool = True) -> Place | None:
    """A city of the built-in table ("北京时间" too), else (with ``zones``) a time zone form, a
    zone's exemplar city in any CLDR locale or an abbreviation; None when the geocoder is needed
    or the name is ambiguous (``ambiguous_zones`` says). The table comes first: "Singapore" is
    the city, not the zone alias; CLDR cities have no coordinates, so the weather asks the
    geocoder for them. The first call that reaches CLDR loads its index (see ``zonenames``)."""
    raw = " ".join(text.split())
    for form in _forms(raw):
        city = lookup_city(form)
        if city is not None:
            return city_place(city)
    if not zones:
        return None
    zone = parse_zone(raw)
    if zone is not None or not raw:
        return zone
    found, abbreviation = _cldr_zones(raw)
    return cldr_place(found[0], abbreviation=abbreviation) if len(found) == 1 else None


def ambiguous_zones(text: str) -> tuple[str, ...]:
    """The clocks a name or abbreviation may mean when it is more than one ("Salvador", "CST");
    () otherwise."""
    raw = " ".join(text.split())
    found = _cldr_zones(raw)[0] if raw else ()
    return found if len(found) > 1 else ()


async def warm_offline(query: str) -> None:
    """Load CLDR's names in a worker thread when ``query`` names a place that the table and the
    zone forms do not know, so later offline look-ups on the event loop are cheap."""
    from saber.tools.builtin.mentions import place_mentions

    for name in place_mentions(query):
        forms = _forms(" ".join(name.split()))
        try:
            known = any(lookup_city(f) for f in forms) or parse_zone(forms[0]) is not None
        except UnknownPlaceError:
            known = True
        if not known:
            await load_zone_names()
            return


# -- the geocoder ---------------------------------------------------------------------------------

class _GeoResult(BaseModel):
    name: str
    latitude: float
    longitude: float
    timezone: str | None = None
    country: str | None = None
    admin1: str | None = None


class _GeoResponse(BaseModel):
    results: list[_GeoResult] = []


_has_cjk = has_han


class PlaceResolver:
    """Resolves place names; one per process (or per tool set), so its cache is shared."""

    def __init__(self, *, geocoding_url: str = DEFAULT_GEOCODING_URL, timeout: float = 10.0,
                 transport: httpx.AsyncBaseTransport | None = None, cache_size: int = 1024) -> None:
        self.geocoding_url = geocoding_url
        self.timeout = timeout
        self.transport = transport
        self.cache_size = cache_size
        self._cache: OrderedDict[str, Place | None] = OrderedDict()

    async def resolve(self, text: str, *, zones: bool = True) -> Place:
        """The place ``text`` names. Raises UnknownPlaceError (not found) or ToolError (geocoder down).

        ``zones`` False is for what needs coordinates (the weather): a time zone is then an error.
        """
        raw = " ".join(str(text).split())
        if not raw:
            raise UnknownPlaceError(raw, "no place given")
        await load_zone_names()
        offline = resolve_offline(raw, zones=zones)
        if offline is not None:
            return offline
        if zones and (choices := ambiguous_zones(raw)):
            raise AmbiguousPlaceError(raw, choices)
        if not zones and (zone := parse_zone(raw)) is not None and (zone.timezone or "").startswith("UTC"):
            raise UnknownPlaceError(raw, "that is a time zone, not a place with weather")
        reject_offline(raw)
        key = raw.casefold()
        if key in self._cache:
            self._cache.move_to_end(key)
            found = self._cache[key]
        else:
            try:
                found = await self._geocode(raw)
            except ToolError as exc:
                mentioned = find_city(raw)  # "weather in Paris" from a model: the city inside the text
                if mentioned is not None:
                    return city_place(mentioned)
                raise ToolError(f"cannot look up the place {raw!r}: {exc}", retryable=exc.retryable) from None
            self._remember(key, found)
        if found is None:
            mentioned = find_city(raw)
            if mentioned is not None:
                return city_place(mentioned)
            raise UnknownPlaceError(raw)
        return found

    def _remember(self, key: str, place: Place | None) -> None:
        self._cache[key] = place
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    async def _geocode(self, raw: str) -> Place | None:
        """The geocoder's best match; "Boulder, Colorado" asks for "Boulder" and prefers the result
        in Colorado (the service matches names, not qualified names)."""
        head, _, qualifier = raw.partition(",")
        async with make_client(self.timeout, self.transport) as client:
            results = await self._search(client, raw)
            if not results and qualifier.strip():
                results = await self._search(client, head.strip())
        if not results:
            return None
        want = qualifier.strip().casefold()
        hit = next((r for r in results if want and want in {(r.admin1 or "").casefold(), (r.country or "").casefold()}),
                   results[0])
        timezone = hit.timezone
        try:
            if timezone:
                ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError):
            timezone = None
        return Place(name=hit.name, timezone=timezone, kind="city", source="geocoder", country=hit.country,
                     region=hit.admin1, latitude=hit.latitude, longitude=hit.longitude)

    async def _search(self, client: httpx.AsyncClient, name: str) -> list[_GeoResult]:
        body = await request_json(
            client, "GET", self.geocoding_url, service=_SERVICE, budget=self.timeout,
            params={"name": name, "count": 5, "language": "zh" if _has_cjk(name) else "en", "format": "json"},
        )
        try:
            return _GeoResponse.model_validate(body).results
        except ValidationError as exc:
            err = exc.errors(include_url=False)[0]
            raise ToolError(f"the {_SERVICE} answer has an unexpected shape: {err['msg']}") from None
