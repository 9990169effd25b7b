"""Answers assembled without a model, written for a person in the query's language.

Tool results are rendered through per-language templates (not pasted English); each fact is said
once; failures are summarised once per cause ("天气服务暂时无法访问（北京、上海）"); the answer says
when it used the user's preferred city or the default time zone; sources are listed at the end.
The no-model note is added once, by the caller (``generate.stream_answer``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from saber.agent.prompts import Lang
from saber.graph.node import Node, NodeStatus
from saber.graph.result import RunResult
from saber.llm.nomodel import NO_MODEL_NOTE, NO_MODEL_NOTE_ZH
from saber.tools.builtin.clock import TIME_LINE
from saber.tools.builtin.timeconvert import CONVERSION_LINE

WEEKDAYS_ZH = {"Monday": "星期一", "Tuesday": "星期二", "Wednesday": "星期三", "Thursday": "星期四", "Friday": "星期五",
               "Saturday": "星期六", "Sunday": "星期日"}
WEATHER_ZH = {
    "clear sky": "晴", "mainly clear": "大部晴朗", "partly cloudy": "多云", "overcast": "阴", "fog": "雾",
    "depositing rime fog": "雾凇", "light drizzle": "小毛毛雨", "moderate drizzle": "毛毛雨", "dense drizzle": "浓毛毛雨",
    "light freezing drizzle": "小冻毛毛雨", "dense freezing drizzle": "冻毛毛雨", "slight rain": "小雨",
    "moderate rain": "中雨", "heavy rain": "大雨", "light freezing rain": "小冻雨", "heavy freezing rain": "冻雨",
    "slight snowfall": "小雪", "moderate snowfall": "中雪", "heavy snowfall": "大雪", "snow grains": "米雪",
    "slight rain showers": "小阵雨", "moderate rain showers": "阵雨", "violent rain showers": "强阵雨",
    "slight snow showers": "小阵雪", "heavy snow showers": "大阵雪", "thunderstorm": "雷暴",
    "thunderstorm with slight hail": "雷暴伴小冰雹", "thunderstorm with heavy hail": "雷暴伴大冰雹",
    "conditions not reported": "天气状况未报告",
}
_WEATHER_LINE = re.compile(
    r"^Current weather in (?P<place>.+?)(?: at (?P<when>\d{4}-\d{2}-\d{2} \d{2}:\d{2}) local time(?: \((?P<tz>[^)]*)\))?)?: "
    r"(?P<parts>.+?)\. Source: (?P<source>[^.]+)\.$", re.DOTALL,
)
_NOTES = (NO_MODEL_NOTE, NO_MODEL_NOTE_ZH)


@dataclass
class _Answer:
    lang: Lang
    facts: list[str] = field(default_factory=list)
    failures: dict[str, list[str]] = field(default_factory=dict)
    """Summary of a cause → the places (or calls) it hit, in order."""
    notes: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

    def add(self, bucket: list[str], text: str) -> None:
        if text and text not in bucket:
            bucket.append(text)

    def fail(self, summary: str, what: str) -> None:
        hit = self.failures.setdefault(summary, [])
        if what and what not in hit:
            hit.append(what)

    def text(self) -> str:
        zh = self.lang == "zh"
        lines = list(self.facts)
        for summary, what in self.failures.items():
            sep = "、" if zh else ", "
            lines.append(f"{summary}（{sep.join(what)}）" if zh and what else f"{summary} ({sep.join(what)})" if what else summary)
        lines += self.notes
        if self.sources:
            lines.append(("来源：" if zh else "Sources: ") + ("；" if zh else "; ").join(self.sources))
        if not lines:
            return "没有得到任何结果。" if zh else "Nothing was found."
        return "\n".join(lines)


def strip_notes(text: str) -> str:
    """``text`` without the no-model notes sub-steps added to their own output (the answer has one)."""
    for note in _NOTES:
        text = text.replace(f"> {note}", "").replace(note, "")
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _place_zh(label: str) -> str:
    """"Tokyo (东京), Japan" → "东京"; "大理, 云南, 中国" → "大理（云南，中国）"; a zone unchanged."""
    m = re.match(r"^[^(]+\(([^)]+)\)", label)
    if m:
        return m.group(1)
    head, *rest = [p.strip() for p in label.split(",")]
    return f"{head}（{'，'.join(rest)}）" if rest else head


def render_time(text: str, lang: Lang) -> str | None:
    m = TIME_LINE.match(text.strip())
    if m is None:
        return None
    place, details = m.group("place"), m.group("details")
    if lang == "zh":
        return (f"{_place_zh(place)}现在是 {m.group('date')} {WEEKDAYS_ZH.get(m.group('weekday'), m.group('weekday'))} "
                f"{m.group('time')}（{details}）。")
    return f"In {place} it is {m.group('time')} on {m.group('weekday')}, {m.group('date')} ({details})."


def render_conversion(text: str, lang: Lang) -> str | None:
    """A ``convert_time`` result as a sentence: both wall-clock times, and how the date was chosen."""
    m = CONVERSION_LINE.match(text.strip())
    if m is None:
        return None
    if lang != "zh":
        return (f"{m.group('from_time')} on {m.group('from_weekday')}, {m.group('from_date')} in {m.group('source')} "
                f"is {m.group('to_time')} on {m.group('to_weekday')}, {m.group('to_date')} in {m.group('target')} "
                f"({m.group('how')}).")
    how = m.group("how")
    notes = [f"没有给出日期，按{_place_zh(m.group('source'))}当地的今天计算" if how.startswith("no date was given") else ""]
    notes.append("该时刻当天出现两次（时钟回拨），取第一次" if "occurs twice" in how else "")
    said = "；".join(n for n in notes if n)
    return (f"{_place_zh(m.group('source'))} {m.group('from_date')} "
            f"{WEEKDAYS_ZH.get(m.group('from_weekday'), m.group('from_weekday'))} {m.group('from_time')}，"
            f"是{_place_zh(m.group('target'))} {m.group('to_date')} "
            f"{WEEKDAYS_ZH.get(m.group('to_weekday'), m.group('to_weekday'))} {m.group('to_time')}"
            + (f"（{said}）" if said else "") + "。")


def _weather_parts_zh(parts: str) -> str:
    out: list[str] = []
    for part in parts.split(", "):
        if part in WEATHER_ZH:
            out.append(WEATHER_ZH[part])
        elif m := re.fullmatch(r"([-\d.]+) (\S+)(?: \(feels like ([-\d.]+) (\S+)\))?", part):
            out.append(f"{m.group(1)}{m.group(2)}" + (f"（体感 {m.group(3)}{m.group(4)}）" if m.group(3) else ""))
        elif part.startswith("humidity "):
            out.append("湿度 " + part.removeprefix("humidity "))
        elif part.startswith("wind "):
            out.append("风速 " + part.removeprefix("wind "))
        else:
            out.append(part)
    return "，".join(out)


def render_weather(text: str, lang: Lang) -> tuple[str, str] | None:
    """(sentence, source) for a ``get_weather`` line."""
    m = _WEATHER_LINE.match(text.strip())
    if m is None:
        return None
    place, when, parts = m.group("place"), m.group("when"), m.group("parts")
    if lang == "zh":
        at = f"（当地时间 {when[-5:]}）" if when else ""
        return f"{_place_zh(place)}当前天气：{_weather_parts_zh(parts)}{at}。", m.group("source")
    at = f" (local time {when[-5:]})" if when else ""
    return f"Weather in {place} now: {parts}{at}.", m.group("source")


def _place_of(node: Node) -> str:
    for key in ("timezone", "tz", "city", "location", "place"):
        value = node.params.get(key)
        if value not in (None, ""):
            return str(value)
    named = _NAMED_PLACE.search(str(node.error or ""))  # a tool of two places (convert_time): the one it did not know
    return named.group(1) if named else ""


_NAMED_PLACE = re.compile(r"unknown place '([^']+)'")


_FAILURE_WORDS = re.compile(r"fail|could not|couldn't|cannot|can't|unavailable|unreachable|not available|error|down"
                            r"|失败|无法|不可用|出错|错误|不能|没能|未能", re.IGNORECASE)


def failed_steps_note(nodes: Iterable[Node], lang: Lang, answer: str = "") -> str:
    """What a model-written answer gets appended when steps failed and it does not say so (a
    failure word, and the step's place if it has one): one line naming each failed step and why;
    empty when none failed or the answer owns up to each."""
    seen: list[str] = []
    owned_up = bool(_FAILURE_WORDS.search(answer))
    for node in nodes:
        if node.status is not NodeStatus.FAILED:
            continue
        place = _place_of(node)
        if owned_up and (not place or place.casefold() in answer.casefold()):
            continue
        said = f"{node.target}{f'（{place}）' if lang == 'zh' and place else f' ({place})' if place else ''}: " \
               f"{summarise_failure(node, lang)}"
        if said not in seen:
            seen.append(said)
    if not seen:
        return ""
    return ("\n\n失败的步骤：" if lang == "zh" else "\n\nSteps that failed: ") + ("；" if lang == "zh" else "; ").join(seen)


_UNUSABLE_PLACE = re.compile(r"unknown place (?:'[^']*'|\"[^\"]*\"): (.+)")
"""Why a named place is unusable, when it was found wanting rather than not found at all."""


def summarise_failure(node: Node, lang: Lang) -> str:
    """One short sentence for why ``node`` failed, the same for every node that failed the same way."""
    error = str(node.error or node.status.value)
    low = error.casefold()
    zh = lang == "zh"
    tool = node.target
    if "unknown place" in low:
        detail = _UNUSABLE_PLACE.search(error)
        if detail and not detail.group(1).startswith("no city, time zone or place"):  # e.g. UTC offset out of range
            return f"无法使用这个地点：{detail.group(1)}" if zh else f"Not a usable place: {detail.group(1)}"
        return "找不到这个地点，无法查询" if zh else "No such place was found"
    unreachable = any(k in low for k in ("could not be reached", "unreachable", "no answer within", "timed out", "timeout"))
    if "geocoding service" in low and unreachable:
        return "地名查询服务暂时无法访问" if zh else "The place lookup service could not be reached"
    if tool == "get_weather" and (unreachable or "weather service" in low):
        return "天气服务暂时无法访问" if zh else "The weather service could not be reached"
    if tool == "search_web" and unreachable:
        return "网络搜索暂时无法访问" if zh else "Web search could not be reached"
    if tool == "search_web":
        return "网络搜索暂时无法使用" if zh else "Web search is not available"
    if unreachable and node.agent is None:
        return f"{tool} 暂时无法访问" if zh else f"{tool} could not be reached"
    # A sub-agent's error is about the tools it used (a search that could not be reached is not
    # the sub-agent being unreachable): say it as it was reported.
    first = error.splitlines()[0] if error else node.status.value
    first = first if len(first) <= 160 else first[:157] + "…"
    if first.startswith(f"{tool} "):
        return first
    return f"{tool} 失败：{first}" if zh else f"{tool} failed: {first}"


def _render_done(node: Node, answer: _Answer) -> None:
    zh = answer.lang == "zh"
    result = node.result
    text = result if isinstance(result, str) else ""
    if node.tool == "get_time" and (line := render_time(text, answer.lang)):
        answer.add(answer.facts, line)
        return
    if node.tool == "convert_time" and (line := render_conversion(text, answer.lang)):
        answer.add(answer.facts, line)
        return
    if node.tool == "get_weather" and (rendered := render_weather(text, answer.lang)):
        answer.add(answer.facts, rendered[0])
        answer.add(answer.sources, rendered[1])
        return
    if node.agent == "research_agent" and isinstance(result, dict):
        for finding in result.get("findings") or []:
            if finding.get("titles"):
                for title in finding["titles"]:
                    answer.add(answer.sources, f"《{title}》" if zh else f"knowledge base: {title}")
            else:
                answer.add(answer.sources, f"网络搜索：{finding.get('query')}" if zh else f"web search: {finding.get('query')}")
        return
    if node.agent in ("writer_agent", "review_agent") and isinstance(result, str):
        answer.add(answer.facts, strip_notes(result))
        return
    if node.agent == "doc_agent":
        title = result.get("title") if isinstance(result, dict) else None
        answer.add(answer.facts, (f"已保存到知识库：{title}" if zh else f"Saved to the knowledge base: {title}") if title else
                   ("已保存到知识库。" if zh else "Saved to the knowledge base."))
        return
    from saber.agent.observations import as_text

    body = strip_notes(as_text(result, 1500))
    label = {"rag_search": "知识库" if zh else "Knowledge base", "search_web": "网络搜索" if zh else "Web search"}.get(
        node.target, node.target)
    answer.add(answer.facts, f"{label}：{body}" if zh else f"{label}: {body}")


def render_nodes(nodes: Iterable[Node], lang: Lang, *, query: str = "", preferences: Mapping[str, Any] | None = None,
                 default_timezone: str | None = None) -> str:
    """The no-model answer for what these nodes found (in order), without the no-model note."""
    from saber.tools.builtin.mentions import place_mentions

    answer = _Answer(lang=lang)
    zh = lang == "zh"
    named = bool(place_mentions(query)) if query else True
    prefs = {str(v) for v in (preferences or {}).values() if v}
    for node in nodes:
        place = _place_of(node)
        if node.tool in ("get_time", "get_weather") and not named:
            if place in prefs:
                answer.add(answer.notes, f"（没有指定地点，按你的偏好使用{place}）" if zh else
                           f"(No place was named; using your preference, {place}.)")
            elif node.tool == "get_time" and default_timezone and place in ("", default_timezone):
                answer.add(answer.notes, f"（没有指定地点，按默认时区 {default_timezone}）" if zh else
                           f"(No place was named, so the default time zone, {default_timezone}, was used.)")
        if node.status is NodeStatus.DONE:
            _render_done(node, answer)
        elif node.status is NodeStatus.SKIPPED and node.error is None:
            continue
        elif node.status in (NodeStatus.SKIPPED, NodeStatus.CANCELLED):
            answer.fail("因前面的步骤失败而跳过" if zh else "Skipped because an earlier step failed", node.target)
        else:
            answer.fail(summarise_failure(node, lang), place or node.target)
    return answer.text()


def ask_for_city(lang: Lang) -> str:
    return ("请告诉我要查哪个城市的天气：问题里没有地点，也没有记住你所在的城市。" if lang == "zh" else
            "Which city's weather would you like? The question names no place and I know of no city you prefer.")


def nothing_relevant(query: str, lang: Lang, evidence: str = "") -> str:
    """What rag mode answers when no passage is relevant to the query."""
    why = f"（{evidence}）" if evidence and lang == "zh" else f" ({evidence})" if evidence else ""
    if lang == "zh":
        return f"知识库中没有找到相关内容，无法根据已有文档回答“{query[:80]}”{why}。"
    return f"The knowledge base has nothing relevant to {query[:80]!r}{why}."


def rule_answer(run: RunResult, lang: Lang, *, query: str = "", preferences: Mapping[str, Any] | None = None,
                default_timezone: str | None = None) -> str:
    """The no-model answer: each fact once in the query's language, failures summarised once per
    cause, the preferred city or default zone said when used, sources listed (see ``render``)."""
    return render_nodes(run.nodes.values(), lang, query=query, preferences=preferences, default_timezone=default_timezone)
