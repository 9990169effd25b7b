"""Routing: pick chat, tool, rag or react for a query without calling a model.

Routing sits on every request, so it must be fast, cheap and predictable: keyword rules in
Chinese and English, kept in one table (``NEEDS`` below, over ``saber.lexical.keywords``) so
they are easy to read and extend. Each decision
names the rule that fired; the ``route`` event carries it to the user.

The knowledge base is chosen when the query names it ("my notes", "知识库") or when its best
passage is relevant (``KnowledgeEvidence``: calibrated relevance against a threshold, computed by
``saber.agent.relevance`` before routing) — not merely because documents exist. Small talk and
thanks are chat. A time or weather question about several places is a plan with one call each; a
given time converted from one place to another is one ``convert_time`` call.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Literal

from saber.lexical import keywords as kw

Mode = Literal["chat", "tool", "rag", "react"]
MODES: tuple[Mode, ...] = ("chat", "tool", "rag", "react")


@dataclass(frozen=True, kw_only=True, slots=True)
class KnowledgeEvidence:
    """The best passage's relevance to a query against the threshold: why rag was (not) chosen."""

    best: float
    threshold: float
    title: str | None = None
    calibrated: bool = True
    """False when the threshold came from the settings rather than calibration."""
    exact: str | None = None
    """A rare term of the query (an id, a version, an error code, a rare name) that a passage holds
    exactly: relevant whatever the score (``saber.rag.exact``); ``title`` is that passage's then."""

    @property
    def relevant(self) -> bool:
        return self.best >= self.threshold or self.exact is not None

    def to_dict(self) -> dict[str, object]:
        return {"best": round(self.best, 4), "threshold": round(self.threshold, 4), "relevant": self.relevant,
                "title": self.title, "calibrated": self.calibrated, "exact": self.exact}

    def describe(self) -> str:
        score = f"best {self.best:.3f} {'≥' if self.best >= self.threshold else '<'} threshold {self.threshold:.3f}"
        return f"exact match of {self.exact!r} ({score})" if self.exact is not None else score


@dataclass(frozen=True, kw_only=True, slots=True)
class Need:
    """Something a query asks for, recognised by keywords, and the tool that serves it (if any)."""

    name: str
    pattern: re.Pattern[str]
    tool: str | None


NEEDS: tuple[Need, ...] = (
    Need(name="time", tool="get_time", pattern=kw.TIME),
    Need(name="weather", tool="get_weather", pattern=kw.WEATHER),
    Need(name="search", tool="search_web", pattern=kw.SEARCH),
    Need(name="summary", tool=None, pattern=kw.SUMMARY),
)
"""A query with two or more needs is a multi-step task (react); exactly one tool need is tool mode.
The keywords themselves are in ``saber.lexical.keywords``, shared with the rule planner."""

CONVERT = Need(name="convert", tool="convert_time", pattern=kw.TIME)
"""A given time of day converted between places ("把北京时间下午3点换算成伦敦时间"): it takes the place
of the time need, so two places in it are one conversion, not two clocks (``conversion_request``)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RouteOptions:
    """What the caller chose explicitly; each field overrides the keyword rules."""

    mode: Mode | None = None
    selected_tools: Sequence[str] | None = None
    use_rag: bool | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class RouteDecision:
    """Which mode a query goes to (chat, tool, rag or react), the rule that decided it and the
    tools the route may use."""

    mode: Mode
    rule: str
    """Which rule fired, e.g. ``keywords:react(time+weather)``."""
    tools: list[str] = field(default_factory=list)
    """Tools this route may use (all available ones unless the caller selected some)."""
    needs: list[str] = field(default_factory=list)
    evidence: KnowledgeEvidence | None = None
    """The knowledge base's best relevance vs its threshold, when it was consulted."""


ROUTE_SCAN_CHARS = 8192
"""The router decides from the start of a query: scanning a 100 KB query with every rule would hold
the interpreter (and so the event loop) for tens of milliseconds, and a request's intent is
stated up front."""


def find_needs(query: str, tools: Collection[str] | None = None) -> list[Need]:
    """What ``query`` asks for; a time conversion only when ``convert_time`` is among ``tools`` (or
    no tools are given)."""
    needs = [need for need in NEEDS if need.pattern.search(query)]
    if tools is None or CONVERT.tool in tools:
        from saber.tools.builtin.conversion import conversion_request, other_clocks

        conversion = conversion_request(query)
        if conversion is not None:  # the time need stays when another sentence asks a clock
            needs = [CONVERT, *(n for n in needs if n.name != "time" or other_clocks(query, conversion))]
    return needs


Matcher = Callable[[str, Collection[str]], "str | None"]
"""``ToolIndex.best_match``: the (MCP) tool a query is clearly about when no keyword names a built-in."""


def route(query: str, *, tools: Collection[str], knowledge_loaded: bool, options: RouteOptions | None = None,
          evidence: KnowledgeEvidence | None = None, matcher: Matcher | None = None) -> RouteDecision:
    """Decide the mode for ``query`` given the available tool names, whether the knowledge base has
    chunks and, when it has, how relevant its best passage is (``evidence``); ``matcher`` finds a
    tool no keyword names (MCP tools)."""
    options = options or RouteOptions()
    query = query[:ROUTE_SCAN_CHARS]
    needs = find_needs(query, tools)
    need_names = [n.name for n in needs]
    if options.mode == "tool":  # the tools the query asks for; never "the first registered tool"
        allowed = list(options.selected_tools or tools)
        wanted = [n.tool for n in needs if n.tool in allowed] or (allowed if len(allowed) == 1 else [])
        return RouteDecision(mode="tool", rule="explicit:mode=tool", tools=[t for t in wanted if t], needs=need_names)
    if options.mode is not None:
        return RouteDecision(mode=options.mode, rule=f"explicit:mode={options.mode}", tools=list(options.selected_tools or tools), needs=need_names)
    if options.selected_tools:
        selected = list(options.selected_tools)
        if len(selected) > 1 or len(needs) > 1 or kw.is_research_request(query):
            return RouteDecision(mode="react", rule=f"explicit:tools({len(selected)})", tools=selected, needs=need_names)
        return RouteDecision(mode="tool", rule=f"explicit:tool({selected[0]})", tools=selected, needs=need_names)
    if options.use_rag and knowledge_loaded:
        return RouteDecision(mode="rag", rule="explicit:use_rag", tools=list(tools), needs=need_names, evidence=evidence)
    use_kb = knowledge_loaded and options.use_rag is not False
    return _route_by_keywords(query, needs, tools, use_kb, evidence if use_kb else None, matcher)


def _route_by_keywords(query: str, needs: list[Need], tools: Collection[str], knowledge_loaded: bool,
                       evidence: KnowledgeEvidence | None, matcher: Matcher | None = None) -> RouteDecision:
    names = [n.name for n in needs]
    available = list(tools)
    if kw.is_research_request(query):
        return RouteDecision(mode="react", rule="keywords:react(research/report)", tools=available, needs=names)
    if len(needs) >= 2:
        return RouteDecision(mode="react", rule=f"keywords:react({'+'.join(names)})", tools=available, needs=names)
    if knowledge_loaded and kw.KNOWLEDGE.search(query) and names in (["search"], ["summary"]):
        return RouteDecision(mode="rag", rule="keywords:rag(search the knowledge base)", tools=available, needs=names,
                             evidence=evidence)
    served = [n for n in needs if n.tool and n.tool in tools]
    if served:
        need = served[0]
        if need.name in ("time", "weather"):
            count = _places_named(query, need.name)
            if count >= 2:
                return RouteDecision(mode="react", rule=f"keywords:react({need.name}×{count} places)", tools=available,
                                     needs=names)
        return RouteDecision(mode="tool", rule=f"keywords:tool({need.name})", tools=[need.tool or ""], needs=names)
    if kw.is_small_talk(query):
        return RouteDecision(mode="chat", rule="keywords:chat(small talk)", tools=available, needs=names)
    match = matcher(query, available) if matcher is not None else None
    if match is not None:
        return RouteDecision(mode="tool", rule=f"tool-index:{match}", tools=[match], needs=names)
    if knowledge_loaded and kw.KNOWLEDGE.search(query):
        return RouteDecision(mode="rag", rule="keywords:rag(knowledge base named)", tools=available, needs=names,
                             evidence=evidence)
    if knowledge_loaded and evidence is not None:
        mode: Mode = "rag" if evidence.relevant else "chat"
        verdict = "relevant" if evidence.relevant else "not-relevant"
        return RouteDecision(mode=mode, rule=f"knowledge-base:{verdict}({evidence.describe()})", tools=available,
                             needs=names, evidence=evidence)
    if knowledge_loaded:
        return RouteDecision(mode="rag", rule="knowledge-base:loaded", tools=available, needs=names)
    return RouteDecision(mode="chat", rule="default:chat", tools=available, needs=names)


def _places_named(query: str, need: str) -> int:
    """How many places the query asks the time (zones count) or the weather (zones do not) of."""
    from saber.tools.builtin.mentions import is_zone_form, place_mentions

    places = place_mentions(query)
    return len(places) if need == "time" else sum(not is_zone_form(p) for p in places)


def needs_knowledge_evidence(query: str, options: RouteOptions | None = None) -> bool:
    """Whether routing this query can depend on the knowledge base's relevance (so the caller
    computes the evidence only then: it costs an embedding)."""
    options = options or RouteOptions()
    if options.mode not in (None, "rag") or options.selected_tools or options.use_rag is False:
        return False
    if kw.is_research_request(query) or kw.is_small_talk(query):
        return False
    return not find_needs(query) or options.use_rag is True or options.mode == "rag"
