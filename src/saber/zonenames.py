"""Place names from CLDR (through Babel): every IANA zone's exemplar city in every locale, and the
time zone abbreviations of tzdata and of CLDR's English locales.

``zone_names().cities("霍巴特")`` → ``("Australia/Hobart",)``; ``.abbreviation("JST")`` →
``("Asia/Tokyo",)``; a name two zones share ("Salvador") gives both, and the caller says so
instead of guessing.

Reading the time zone data of Babel's ~1,150 locales takes about half a second, so the index is
built once per Babel and tzdata version and kept as JSON in the user's cache directory
(``$XDG_CACHE_HOME/saber`` or ``~/.cache/saber``); later processes load it in tens of
milliseconds. Callers on an event loop use ``load_zone_names()``, which does the first load in a
worker thread.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import threading
import unicodedata
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from saber.cachedir import cache_dir

_FORMAT = 2
"""Bumped when the cached file's shape changes."""


def name_key(name: str) -> str:
    """How names are compared: case folded, full-width forms folded, and for alphabetic scripts
    for Latin names accents dropped ("Reykjavík" = "reykjavik"); other scripts keep their marks."""
    text = unicodedata.normalize("NFKC", name.replace("\u2019", "'")).strip()
    if all(ord(ch) < 0x370 for ch in text):  # Latin only: other scripts' marks are letters' parts
        text = "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))
    return " ".join(text.casefold().split())


@dataclass(frozen=True, kw_only=True, slots=True)
class ZoneLabel:
    """How answers name a zone's city."""

    name: str
    """English exemplar city ("Hobart", "Reykjavik")."""
    name_zh: str | None
    """Simplified Chinese exemplar city ("霍巴特"), when CLDR has one."""
    country: str | None
    """English name of the zone's territory ("Australia")."""


@dataclass(frozen=True, slots=True)
class ZoneNames:
    """Exemplar cities and abbreviations → IANA zones (each tuple sorted, one zone per clock)."""

    by_city: dict[str, tuple[str, ...]]
    by_abbreviation: dict[str, tuple[str, ...]]
    labels: dict[str, ZoneLabel]

    def cities(self, name: str) -> tuple[str, ...]:
        """The zones whose exemplar city is ``name`` in some locale; () when none, two or more when
        the name is ambiguous."""
        return self.by_city.get(name_key(name), ())

    def abbreviation(self, text: str) -> tuple[str, ...]:
        """The zones an abbreviation written in capitals ("JST", "CET", "AEST") stands for: one,
        or one per offset when it is ambiguous ("CST", "IST"); () for anything else."""
        raw = text.strip()
        if not (2 <= len(raw) <= 5 and raw.isalpha() and raw.isascii() and raw[0].isupper()
                and sum(ch.isupper() for ch in raw) >= len(raw) - 1):
            return ()
        return self.by_abbreviation.get(raw.upper(), ())

    def label(self, zone: str) -> ZoneLabel:
        found = self.labels.get(zone)
        return found or ZoneLabel(name=zone.rsplit("/", 1)[-1].replace("_", " "), name_zh=None, country=None)


# -- building -------------------------------------------------------------------------------------

def _valid_zones() -> set[str]:
    valid = set()
    for zone in available_timezones():
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            continue
        if "/" in zone or zone.isupper():  # not "localtime", "Factory"
            valid.add(zone)
    return valid


def _canonical(zone: str, aliases: dict[str, str], valid: set[str]) -> str | None:
    zone = aliases.get(zone, zone)
    return zone if zone in valid and not zone.startswith("Etc/") else None


def _city_names(valid: set[str], aliases: dict[str, str]) -> tuple[dict[str, set[str]], dict[str, ZoneLabel], Counter[str]]:
    """Exemplar names → zones, each zone's label, and how many locales name each zone's city (how
    well known it is). A second zone that a single locale gives a name that several give another
    is that locale's spelling, not a second meaning ("Tegusigalpa" is Tegucigalpa, not Zagreb)."""
    from babel import Locale, localedata
    from babel.core import get_global

    uses: dict[str, Counter[str]] = {}
    fame: Counter[str] = Counter()
    english: dict[str, str] = {}
    chinese: dict[str, str] = {}
    for ident in localedata.locale_identifiers():
        data = localedata.load(ident, merge_inherited=False)
        for zone, info in data.get("time_zones", {}).items():
            city = info.get("city")
            canonical = _canonical(zone, aliases, valid)
            if not city or canonical is None or len(city) < 2:
                continue
            uses.setdefault(name_key(city), Counter())[canonical] += 1
            fame[canonical] += 1
            if ident == "en":
                english.setdefault(canonical, city)
            elif ident == "zh":
                chinese.setdefault(canonical, city)
    zones = {z for z in (_canonical(z, aliases, valid) for z in get_global("zone_territories")) if z}
    for zone in zones:  # English CLDR leaves most cities to the zone id: "Atlantic/Reykjavik" → "Reykjavik"
        if zone not in english and "/" in zone:
            english[zone] = zone.rsplit("/", 1)[-1].replace("_", " ")
            uses.setdefault(name_key(english[zone]), Counter())[zone] += 1
    by_city: dict[str, set[str]] = {}
    for key, counts in uses.items():
        top = max(counts.values())
        by_city[key] = {z for z, n in counts.items() if n > 1 or top < 3}
    territories = get_global("zone_territories")
    countries = Locale.parse("en").territories
    labels = {zone: ZoneLabel(name=english.get(zone, zone), name_zh=chinese.get(zone),
                              country=countries.get(territories.get(zone, ""), None))
              for zone in {*english, *chinese}}
    return by_city, labels, fame


def _principal(zones: set[str], fame: Counter[str]) -> str:
    """Of zones that keep one clock, the principal one: a zone CLDR maps a Windows time zone to
    ("America/Los_Angeles" for PST, not "America/Tijuana"; for EST "America/New_York", whose
    Windows name has no "(Mexico)"), then the one most locales name."""
    from babel.core import get_global

    windows = get_global("windows_zone_mapping")
    plain = {zone for name, zone in windows.items() if "(" not in name}  # not "Eastern Standard Time (Mexico)"
    return min(zones, key=lambda z: (z not in plain, z not in windows.values(), -fame[z], z))


def _abbreviations(valid: set[str], aliases: dict[str, str], fame: Counter[str], year: int) -> dict[str, set[str]]:
    """tzdata's abbreviations in January and July of ``year`` (what clocks say today), grouped by
    offset, plus CLDR's English short names of metazones ("AEST", "SGT") that tzdata lacks."""
    from babel import localedata
    from babel.core import get_global

    by_offset: dict[str, dict[timedelta, set[str]]] = {}
    for zone in valid:
        info = ZoneInfo(zone)
        for month in (1, 7):
            local = datetime(year, month, 15, 12, tzinfo=UTC).astimezone(info)
            abbr, offset = local.tzname(), local.utcoffset()
            if abbr and offset is not None and abbr.isalpha() and abbr.isascii():
                by_offset.setdefault(abbr.upper(), {}).setdefault(offset, set()).add(zone)
    metazone_of = get_global("meta_zones")
    for ident in localedata.locale_identifiers():
        if ident != "en" and not ident.startswith("en_"):
            continue
        for metazone, info in localedata.load(ident, merge_inherited=False).get("meta_zones", {}).items():
            for abbr in info.get("short", {}).values():
                if not (abbr.isalpha() and abbr.isascii()) or abbr.upper() in by_offset:
                    continue
                members = {z for z, m in metazone_of.items() if m == metazone}
                members = {c for c in (_canonical(z, aliases, valid) for z in members) if c}
                if members:
                    offsets = by_offset.setdefault(abbr.upper(), {})
                    for zone in members:
                        offsets.setdefault(_clock_of(zone, year), set()).add(zone)
    out: dict[str, set[str]] = {}
    for abbr, groups in by_offset.items():
        canonical_groups = [{c for c in (_canonical(z, aliases, valid) for z in zs) if c} or zs for zs in groups.values()]
        out[abbr] = {_principal(zs, fame) for zs in canonical_groups}
    return out


def _clock_of(zone: str, year: int) -> timedelta:
    return datetime(year, 1, 15, 12, tzinfo=UTC).astimezone(ZoneInfo(zone)).utcoffset() or timedelta(0)


def build_zone_names(year: int | None = None) -> ZoneNames:
    """Read Babel's locales and tzdata (about half a second)."""
    from babel.core import get_global

    valid = _valid_zones()
    aliases = {a: t for a, t in get_global("zone_aliases").items() if t in valid}
    by_city, labels, fame = _city_names(valid, aliases)
    abbreviations = _abbreviations(valid, aliases, fame, year or datetime.now(UTC).year)
    return ZoneNames(by_city={k: tuple(sorted(v)) for k, v in by_city.items()},
                     by_abbreviation={k: tuple(sorted(v)) for k, v in abbreviations.items()},
                     labels=labels)


# -- the cached copy ------------------------------------------------------------------------------

def _cache_file(directory: Path) -> Path:
    import babel

    try:
        from importlib.metadata import version

        tzdata = version("tzdata")
    except Exception:  # no tzdata package: the system's zone files
        tzdata = "system"
    year = datetime.now(UTC).year
    return directory / f"zone-names-v{_FORMAT}-babel{babel.__version__}-tz{tzdata}-{year}.json"


def _to_json(names: ZoneNames) -> str:
    return json.dumps({"cities": names.by_city, "abbreviations": names.by_abbreviation,
                       "labels": {z: [lb.name, lb.name_zh, lb.country] for z, lb in names.labels.items()}},
                      ensure_ascii=False, separators=(",", ":"))


def _from_json(text: str) -> ZoneNames:
    data = json.loads(text)
    return ZoneNames(by_city={k: tuple(v) for k, v in data["cities"].items()},
                     by_abbreviation={k: tuple(v) for k, v in data["abbreviations"].items()},
                     labels={z: ZoneLabel(name=v[0], name_zh=v[1], country=v[2]) for z, v in data["labels"].items()})


def read_or_build(directory: Path | None = None) -> ZoneNames:
    """The index from the cache file, else built and written there (a cache that cannot be
    written or read is only slower: the index is then built in memory)."""
    path = _cache_file(directory or cache_dir())
    try:
        return _from_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        pass
    names = build_zone_names()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, delete=False,
                                         suffix=".tmp") as tmp:
            tmp.write(_to_json(names))
        Path(tmp.name).replace(path)
    except OSError:
        pass
    return names


_lock = threading.Lock()
_loaded: ZoneNames | None = None


def zone_names() -> ZoneNames:
    """The process's index, loaded (or built) on first use. Blocking: on an event loop call
    ``await load_zone_names()`` first."""
    global _loaded
    if _loaded is None:
        with _lock:
            if _loaded is None:
                _loaded = read_or_build()
    return _loaded


def loaded_zone_names() -> ZoneNames | None:
    """The index when this process has loaded it, else None (never loads)."""
    return _loaded


async def load_zone_names() -> ZoneNames:
    """``zone_names()`` without blocking the event loop on the first load."""
    return _loaded if _loaded is not None else await asyncio.to_thread(zone_names)
