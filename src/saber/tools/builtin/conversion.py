"""Recognising a time-conversion question: a given wall-clock time, and the place it is in and
the place to express it in.

``conversion_request("把北京时间下午3点换算成伦敦时间")`` → time "下午3点", from "北京", to "伦敦".
The target is the place a conversion word leads to (换算成, 转成, 是…几点, "to", "into"); otherwise
(or asked "几点" of: "…在纽约是几点") the place written next to the time is the source and the other the target ("10:00 UTC in
Asia/Kolkata", "what time is it in Tokyo when it's 9am in New York"). A question with no time of
day written, or fewer than two places, is not a conversion ("东京和纽约现在几点" asks two clocks).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from saber.cities import SCAN_LIMIT
from saber.tools.builtin.mentions import place_mentions
from saber.tools.builtin.wallclock import ClockTimeError, find_clock_time, find_date

_ASKS = re.compile(r"换算|转换|折算|对应|相当于|几点|时间|\bconvert|\bconversion\b|\btime\b|\bin\b", re.IGNORECASE)
_OTHER = re.compile(r"天气|气温|温度|下雨|下雪|航班|\bweather\b|\btemperature\b|\bforecast\b|\brain\b|\bflights?\b",
                    re.IGNORECASE)
"""Another question about the places at that time ("明天下午3点北京和上海的天气"): a clause asking it is
no conversion; the others may be ("…换算成伦敦时间，再查伦敦天气")."""
_CLAUSES = re.compile(r"(?<=[，,；;。！!？?\n])")
_SENTENCES = re.compile(r"(?<=[；;。！!？?\n])")
_CLOCK = re.compile(r"几点|时间|\btime\b|\bclock\b", re.IGNORECASE)
_THEN = re.compile(r"\s*(?:是|的)?(?:几点|什么时间|现在)", re.IGNORECASE)
_TO = re.compile(r"(?:(?:换算|转换|折算|转|换)(?:成|为|到)|是|等于|对应|相当于|成|为|到)\s*(?:的\s*)?$"
                 r"|\b(?:to|into)\s+(?:the\s+)?$", re.IGNORECASE)


@dataclass(frozen=True, kw_only=True, slots=True)
class ConversionRequest:
    """What a conversion question gives, as written: the arguments of ``convert_time``."""

    time: str
    from_place: str
    to_place: str
    date: str | None = None
    sentence: str = ""
    """The sentence of the query that asks it (another may ask something else: ``other_clocks``)."""

    def params(self) -> dict[str, str]:
        out = {"time": self.time, "from_timezone": self.from_place, "to_timezone": self.to_place}
        if self.date:
            out["date"] = self.date
        return out


def conversion_request(query: str) -> ConversionRequest | None:
    """The conversion ``query`` asks for (in its first sentence that asks one), or None. Only the
    first ``SCAN_LIMIT`` characters are read, as for place mentions: a request states its intent up front."""
    for sentence in _SENTENCES.split(query[:SCAN_LIMIT]):
        found = _in_sentence(sentence)
        if found is not None:
            return found
    return None


def other_clocks(query: str, request: ConversionRequest) -> list[str]:
    """Places whose current time the rest of ``query`` asks ("东京现在几点？把北京时间下午3点换算成伦敦时间"
    asks 东京's clock too)."""
    rest = query[:SCAN_LIMIT].replace(request.sentence, " ") if request.sentence else ""
    return place_mentions(rest) if _CLOCK.search(rest) else []


def _in_sentence(query: str) -> ConversionRequest | None:
    sentence = query
    if _OTHER.search(query):
        query = "".join(c for c in _CLAUSES.split(query) if not _OTHER.search(c))
    try:
        clock = find_clock_time(query)
    except ClockTimeError:  # "25点": not a time; not read as a conversion either
        return None
    if clock is None or not _ASKS.search(query):
        return None
    places = [(query.find(name), name) for name in map(_without_lead, place_mentions(query))]
    places = [(at, name) for at, name in places if at >= 0 and not (clock.start <= at < clock.end)]
    if len(places) < 2:
        return None
    cued = [(at, name) for at, name in places
            if _TO.search(query[max(0, at - 8):at]) or _THEN.match(query, at + len(name))]
    if len(cued) == 1:
        target = cued[0]
        source = min((p for p in places if p != target), key=lambda p: _distance(p, clock.start, clock.end))
    else:
        source = min(places, key=lambda p: _distance(p, clock.start, clock.end))
        target = next(p for p in places if p != source)
    return ConversionRequest(time=clock.text, from_place=source[1], to_place=target[1],
                             date=_date_text(query[:clock.start] + " " + query[clock.end:]), sentence=sentence)


def _without_lead(name: str) -> str:
    """"把哥谭" → "哥谭": the object marker of "把X时间…换算成…" is not part of the place."""
    return name[1:] if name[:1] in ("把", "将") and len(name) >= 3 else name


def _distance(place: tuple[int, str], start: int, end: int) -> int:
    at, name = place
    return start - (at + len(name)) if at < start else at - end


def _date_text(text: str) -> str | None:
    """The date written in ``text``, as written (the tool reads it against today in the source place)."""
    try:
        found = find_date(text, date.today())
    except ClockTimeError as exc:  # a date that does not exist: passed on, for the tool to name it
        return str(exc).split("'")[1]
    return found.text if found is not None else None
