"""Routing and argument accuracy on the labelled set in bench/data/routing.jsonl.

    python bench/routing.py            # every query, no language model (the rule path)
    python bench/routing.py --show-failures

Each query runs through a real ``Agent`` (no model, the bundled embedder, a SQLite home with the
documents of bench/data/docs ingested, Open-Meteo replaced by a loopback fake that knows the
places of ``saber.testing.openmeteo.GAZETTEER``, web search off). Per category it prints:

- mode: the ``route`` event's mode is the labelled one;
- args: the tool and sub-agent calls made (tool mode: ``tool_call`` events; react: the plan) are
  the labelled ones, each place call about the labelled place (names compared after resolving
  them: "东京" = "Tokyo", "GMT+8" = "UTC+08:00"), plus the labelled expectation (research topic,
  "nothing relevant", an error naming the place, which preference/default was used);
- wrong place: answers that state a fact about a place other than the ones asked (or, for an
  unresolvable place, any fact at all).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from zoneinfo import available_timezones

from saber import Agent, Settings
from saber.cities import city_names, lookup_city
from saber.testing.openmeteo import GAZETTEER, fake_open_meteo

DATA = Path(__file__).with_name("data")
PLACE_TOOLS = {"get_time", "get_weather"}
_OFFSET = re.compile(r"^(?:utc|gmt)\s*([+-])\s*(\d{1,2})(?::?(\d{2}))?$")
_ZONES = {z.casefold(): z for z in available_timezones()}


def fold(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).casefold().strip()


_GEO = {fold(n): p.name for p in GAZETTEER for n in (p.name, *p.names)}


def canon(place: str | None) -> str | None:
    """One name per place: table cities by their English name, offsets as UTC±hh:mm, IANA as is."""
    if place is None:
        return None
    text = " ".join(str(place).split())
    folded = fold(text)
    if folded in ("utc", "gmt", "z", "utc+0", "gmt+0", "utc+00:00", "utc-0", "utc 0"):
        return "UTC"
    if m := _OFFSET.match(folded):
        minutes = int(m.group(2)) * 60 + int(m.group(3) or 0)
        if not minutes:
            return "UTC"
        return f"UTC{m.group(1)}{int(m.group(2)):02d}:{int(m.group(3) or 0):02d}"
    if m := re.match(r"^(东|西)(十[一二]?|[一二三四五六七八九])区$", text):
        n = {"一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10, "十一": 11, "十二": 12}[m.group(2)]
        return f"UTC{'+' if m.group(1) == '东' else '-'}{n:02d}:00"
    if folded.replace(" ", "_") in _ZONES:
        return _ZONES[folded.replace(" ", "_")]
    city = lookup_city(text) or lookup_city(text.split(",")[0])
    if city is not None:
        return city.name
    head = fold(text.split(",")[0])
    return _GEO.get(head, head)


def _mention_pattern() -> re.Pattern[str]:
    names = {fold(n) for n in city_names()} | set(_GEO)
    alts = [rf"(?<![a-z]){re.escape(n)}(?![a-z])" if n.isascii() else re.escape(n) for n in sorted(names, key=len, reverse=True)]
    return re.compile("|".join(alts))


MENTION = _mention_pattern()
_IANA_TOKEN = re.compile(r"\b[A-Z][A-Za-z_]+/[A-Za-z_/+-]+")
_FACT = re.compile(r"\d{1,2}:\d{2}|°C|\d+ ?km/h")


def mentioned_places(answer: str) -> set[str]:
    text = fold(_IANA_TOKEN.sub(" ", answer))
    return {c for m in MENTION.finditer(text) if (c := canon(m.group(0)))}


def calls_of(events: list[Any], mode: str) -> list[tuple[str, dict[str, Any]]]:
    if mode == "react":
        plans = [e for e in events if e.type == "plan"]
        if not plans:
            return []
        return [(n.get("tool") or n.get("agent") or "", n.get("params") or {}) for n in plans[-1].data["nodes"]]
    return [(e.data["tool_name"], e.data.get("params") or {}) for e in events if e.type == "tool_call"]


def place_param(params: dict[str, Any]) -> str | None:
    for key in ("timezone", "tz", "city", "location", "place"):
        if params.get(key) not in (None, ""):
            return str(params[key])
    return None


DEFAULT_ZONE = "Asia/Shanghai"
"""The configured default time zone: a get_time call with it (the tool's default) names no place."""


def calls_match(row: dict[str, Any], calls: list[tuple[str, dict[str, Any]]]) -> bool:
    want_places = Counter((c["tool"], canon(c["place"])) for c in row["calls"] if c["tool"] in PLACE_TOOLS)
    got_places = Counter((tool, None if tool == "get_time" and canon(place_param(p)) == DEFAULT_ZONE and row.get("expect")
                          == "uses-default" else canon(place_param(p))) for tool, p in calls if tool in PLACE_TOOLS)
    if want_places != got_places:
        return False
    want_other = {c["tool"] for c in row["calls"] if c["tool"] not in PLACE_TOOLS}
    got_other = {tool for tool, _ in calls if tool not in PLACE_TOOLS}
    allowed = want_other | ({"rag_search"} if "search_web" in want_other else set())
    return want_other <= got_other <= allowed


def expectation_met(row: dict[str, Any], answer: str) -> bool:
    expect = row.get("expect", "")
    low = answer.casefold()
    if row.get("topic"):
        from saber.agent.subagents.research import topic_of

        if topic_of(row["query"]).casefold() != row["topic"].casefold():
            return False
    if expect.startswith("error:"):
        return expect[6:].casefold() in low
    if expect == "nothing-relevant":
        return "nothing relevant" in low or "没有找到相关" in answer
    if expect == "asks-city":
        return "which city" in low or "哪个城市" in answer
    if expect == "uses-default":
        return "asia/shanghai" in low and ("default" in low or "默认" in answer)
    if expect.startswith("uses-preference:"):
        return canon(expect.split(":", 1)[1]) in mentioned_places(answer) and ("preference" in low or "偏好" in answer)
    return True


def wrong_place(row: dict[str, Any], answer: str) -> bool:
    if not any(c["tool"] in PLACE_TOOLS for c in row["calls"]) and row.get("expect") != "asks-city":
        return False
    if row.get("expect", "").startswith("error:"):
        return bool(_FACT.search(answer))
    allowed = {canon(c["place"]) for c in row["calls"]}
    allowed |= {canon(z.rsplit("/", 1)[-1].replace("_", " ")) for z in list(allowed) if z and "/" in z}  # Europe/Berlin: Berlin
    allowed |= {canon(p.admin1) for p in GAZETTEER if p.admin1 and p.name in allowed}  # "Uji, Kyoto, Japan": the region
    if row.get("expect") == "uses-default":
        allowed.add("Shanghai")
    return bool(mentioned_places(answer) - allowed)


async def run(rows: list[dict[str, Any]], show: bool) -> int:
    with tempfile.TemporaryDirectory() as home, fake_open_meteo() as geo:
        settings = Settings(home=Path(home), search={"backend": "none"},
                            weather={"geocoding_url": geo.geocoding_url, "forecast_url": geo.forecast_url},
                            tools={"timeout": 5.0})
        agent = Agent(settings)
        for doc in sorted((DATA / "docs").glob("*.md")):
            await asyncio.to_thread(agent.services.knowledge.ingest_file, doc)  # type: ignore[union-attr]
        stats: dict[str, Counter[str]] = defaultdict(Counter)
        failures: list[str] = []
        for i, row in enumerate(rows):
            user = f"u{i}"
            if row.get("prefs") and agent.services.memory is not None:
                await agent.services.memory.set_preferences(user, row["prefs"])
            result = await agent.ask(row["query"], user_id=user)
            mode = result.events[[e.type for e in result.events].index("route")].data["mode"] if any(
                e.type == "route" for e in result.events) else "?"
            calls = calls_of(result.events, mode)
            ok_mode = mode == row["mode"]
            ok_args = ok_mode and calls_match(row, calls) and expectation_met(row, result.answer)
            wrong = wrong_place(row, result.answer)
            s = stats[row["category"]]
            s["n"] += 1
            s["mode"] += ok_mode
            s["args"] += ok_args
            s["wrong"] += wrong
            if show and not (ok_mode and ok_args) or wrong:
                failures.append(f"{row['id']} {row['query']!r}: mode {mode} (want {row['mode']}), calls "
                                f"{[(t, place_param(p)) for t, p in calls]} want {[(c['tool'], c['place']) for c in row['calls']]}"
                                f"{' WRONG PLACE' if wrong else ''}\n    {result.answer[:300]!r}")
        await agent.aclose()
    total: Counter[str] = Counter()
    print(f"{'category':18} {'n':>4} {'mode':>7} {'args':>7} {'wrong place':>12}")
    for cat, s in stats.items():
        total.update(s)
        print(f"{cat:18} {s['n']:4d} {s['mode'] / s['n']:7.1%} {s['args'] / s['n']:7.1%} {s['wrong']:12d}")
    print(f"{'all':18} {total['n']:4d} {total['mode'] / total['n']:7.1%} {total['args'] / total['n']:7.1%} {total['wrong']:12d}")
    for f in failures:
        print(f)
    return 0


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show-failures", action="store_true")
    parser.add_argument("--only", help="a category to run alone")
    args = parser.parse_args(list(argv) if argv is not None else None)
    rows = load(DATA / "routing.jsonl")
    if args.only:
        rows = [r for r in rows if r["category"] == args.only]
    return asyncio.run(run(rows, args.show_failures))


if __name__ == "__main__":
    sys.exit(main())
