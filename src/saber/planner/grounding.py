"""Grounded plans: no argument copied from the prompt's example, no entity of the query left out.

A small model asked to plan "time in Tokyo and weather in Paris" answered with the planner
prompt's own worked example, ``get_weather(city="Shanghai")``. Two checks run on a model's plan
(``parse_plan`` grounds each validated plan, ``ground_validated``, while a ``grounding(...)``
context is active — the agent opens one per request):

- **copied examples**: a parameter value that is one of the prompt example's values and appears
  nowhere in the query, the conversation, the user's preferences or an upstream result was copied
  from the example. The rule planner's value for that parameter replaces it; without one the node
  is dropped. Either way a warning says so.
- **another place** (tool mode's single call only): a place argument (``city``, ``timezone``…)
  that is a known place the query does not name in any form, when the query names places, is
  replaced by the rule planner's value (a tiny model answered ``get_time("Asia/Tokyo")`` for New
  York). A plan may add places the query implies, so plans are not checked this way.
- **coverage**: an entity the query names (a city…) that the rule planner would call a tool for,
  and that no node of the plan mentions (in any argument of any tool), gets the rule planner's
  node, with a warning.

Tool mode checks a model-chosen call the same way (``ground_call``).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from saber.graph.node import Node
from saber.planner.validate import Validated
from saber.tools.base import Tool

if TYPE_CHECKING:
    from saber.tools.builtin.places import Place

COPIED = "copied example"
"""Words every copied-example warning contains (for counting them)."""
ADDED = "not in the plan"
"""Words every coverage warning contains."""
ELSEWHERE = "a place the request does not name"
"""Words every warning about an argument naming another place contains."""

_STRUCTURAL = {"id", "type", "tool", "agent", "depends_on", "race_group"}


@dataclass(kw_only=True)
class GroundingContext:
    """What a request's plan may legitimately take its values from, and the example it must not copy."""

    query: str
    tools: Mapping[str, Tool]
    conversation: Sequence[str] = ()
    preferences: Mapping[str, Any] = field(default_factory=dict)
    agents: Mapping[str, str] = field(default_factory=dict)
    language: str | None = None
    example_text: str | None = None
    """The prompt's worked example; by default the one in the planner prompt for this query."""

    @cached_property
    def example_values(self) -> set[str]:
        text = self.example_text
        if text is None:
            from saber.planner.prompt import build_planner_prompt

            system = build_planner_prompt(self.query, self.tools, agents=self.agents, language=_lang(self.language))[0].content
            text = example_section(system)
        return {_fold(v) for v in example_values(text) if len(_fold(v)) >= 2}

    @cached_property
    def sources(self) -> str:
        """Everything the request itself says, folded, one searchable text."""
        parts = [self.query, *self.conversation, *(str(v) for v in self.preferences.values())]
        return _fold("\n".join(parts))

    @cached_property
    def named_places(self) -> list[str]:
        """The places the query names, as written."""
        from saber.tools.builtin.mentions import place_mentions

        return place_mentions(self.query)

    @cached_property
    def named_resolved(self) -> list[Place] | None:
        """The places the query names, resolved offline; None when one of them is not known offline
        (a country, a small town): then nothing can be said of another place."""
        from saber.tools.builtin.places import resolve_offline

        places = [resolve_offline(name) for name in self.named_places]
        return None if any(p is None for p in places) else [p for p in places if p is not None]

    @cached_property
    def rule_nodes(self) -> list[Node]:
        from saber.planner.rules import rule_plan

        with _suspended():
            return list(rule_plan(self.query, self.tools, agents=self.agents, preferences=self.preferences).nodes)


_CONTEXT: contextvars.ContextVar[GroundingContext | None] = contextvars.ContextVar("saber_grounding", default=None)


@contextlib.contextmanager
def grounding(context: GroundingContext) -> Iterator[None]:
    """Plans validated inside (and in tasks started inside) are grounded against ``context``."""
    token = _CONTEXT.set(context)
    try:
        yield
    finally:
        _CONTEXT.reset(token)


@contextlib.contextmanager
def _suspended() -> Iterator[None]:
    token = _CONTEXT.set(None)
    try:
        yield
    finally:
        _CONTEXT.reset(token)


def current_grounding() -> GroundingContext | None:
    return _CONTEXT.get()


def ground_nodes(nodes: list[Node], *, existing: Mapping[str, Node] | None = None, new_plan: bool = True,
                 context: GroundingContext | None = None,
                 places: bool = False) -> tuple[list[Node], list[str], dict[str, str]]:
    """``nodes`` with copied example values repaired or dropped and, for a ``new_plan``, the rule
    nodes of entities it ignores added. Returns (nodes, warnings, dropped id → why); unchanged
    when no grounding context is active."""
    context = context or current_grounding()
    if context is None or not nodes and not new_plan:
        return nodes, [], {}
    warnings: list[str] = []
    dropped: dict[str, str] = {}
    upstream = _fold("\n".join(_text(n.result) for n in (existing or {}).values() if n.result is not None))
    out: list[Node] = []
    for node in nodes:
        fixed, why = _ground_node(node, context, upstream, out, warnings, places=places)
        if fixed is None:
            dropped[node.id] = why
            warnings.append(f"{node.id} dropped: {why}")
        else:
            out.append(fixed)
    out = _cascade(out, dropped, warnings)
    if new_plan:
        out = _cover(out, context, existing or {}, warnings)
    return out, warnings, dropped


def ground_validated(checked: Validated, *, existing: Mapping[str, Node] | None = None,
                     new_plan: bool = True) -> Validated:
    """A model's validated plan, grounded (``ground_nodes``): its warnings and dropped nodes added.

    ``new_plan=False`` when what needs the whole plan is not decided: the start of a plan still
    being written (the model may write a place next), a plan known to be cut (a token limit,
    ``max_nodes``: the caller reports the cut), a replan, a capped one. Then complete nodes are
    repaired or dropped, and no node is added."""
    nodes, warnings, dropped = ground_nodes(checked.nodes, existing=existing, new_plan=new_plan)
    return Validated(nodes=nodes, warnings=[*checked.warnings, *warnings], dropped={**checked.dropped, **dropped})


def ground_call(node: Node, context: GroundingContext) -> tuple[Node | None, list[str]]:
    """One model-chosen tool call (tool mode): repaired, or None when a copied value has no repair."""
    nodes, warnings, _ = ground_nodes([node], new_plan=False, context=context, places=True)
    return (nodes[0] if nodes else None), warnings


def _ground_node(node: Node, context: GroundingContext, upstream: str, kept: Sequence[Node],
                 warnings: list[str], *, places: bool) -> tuple[Node | None, str]:
    if node.type != "tool" or not node.params:
        return node, ""
    params = dict(node.params)
    for key, value in node.params.items():
        problem = _ungrounded(node, key, value, context, upstream, places=places)
        if problem is None:
            continue
        repair = _rule_value(node.tool or "", key, context, kept)
        if repair is None:
            return None, f"{node.tool} {key}={value!r} is {problem}, and nothing in the request gives a value"
        params[key] = repair
        warnings.append(f"{node.id} {node.tool}: {key}={value!r} is {problem}; the rules' {repair!r} used instead")
    return (replace(node, params=params) if params != node.params else node), ""


def _ungrounded(node: Node, key: str, value: Any, context: GroundingContext, upstream: str, *,
                places: bool) -> str | None:
    """Why ``key=value`` of ``node`` does not come from the request (to be said after "is"), or None."""
    if _copied(value, context, upstream):
        return f"a {COPIED} from the planner prompt"
    clock = key in ("timezone", "tz") or (node.tool or "") == "get_time"
    if places and key in _PLACE_KEYS and _elsewhere(value, context, upstream, clock=clock):
        return f"{ELSEWHERE} (it names {', '.join(context.named_places)})"
    return None


def _elsewhere(value: Any, context: GroundingContext, upstream: str, *, clock: bool) -> bool:
    """``value`` is a known place, the query names places, and ``value`` is none of them in any form
    (a city, its other names or its time zone) nor anything the request or an upstream result says.
    A place is left alone when the query names none or one not known offline: the model may infer
    it ("the capital of Japan" → Asia/Tokyo); an unknown name is left for the tool to refuse."""
    named = context.named_resolved
    if not isinstance(value, str) or not context.named_places or named is None:
        return False
    from saber.tools.builtin.places import resolve_offline

    place = resolve_offline(value)
    if place is None or any(alias in context.sources or alias in upstream for alias in _aliases(value)):
        return False
    if clock:  # a time: any name of the same clock will do
        zone = place.timezone
        return zone is not None and not any(p.timezone is not None and _same_clock(zone, p.timezone) for p in named)
    return _fold(place.name) not in {_fold(p.name) for p in named}


def _same_clock(a: str, b: str) -> bool:
    """Two zone names that keep the same time in winter and in summer ("Japan" and "Asia/Tokyo")."""
    if a == b:
        return True
    from datetime import datetime

    from saber.tools.builtin.places import zone_info

    return all(datetime(2026, month, 15, 12, tzinfo=zone_info(a)).utcoffset()
               == datetime(2026, month, 15, 12, tzinfo=zone_info(b)).utcoffset() for month in (1, 7))


_PLACE_KEYS = frozenset({"timezone", "tz", "city", "location", "place"})


def _copied(value: Any, context: GroundingContext, upstream: str) -> bool:
    if not isinstance(value, str):
        return False
    folded = _fold(value)
    if folded not in context.example_values:
        return False
    return not any(alias in context.sources or alias in upstream for alias in _aliases(value))


def _rule_value(tool: str, key: str, context: GroundingContext, kept: Sequence[Node]) -> Any:
    """The rules' value for ``tool``'s ``key``, preferring one no kept node of that tool uses yet."""
    used = {_fold(str(n.params.get(key))) for n in kept if n.tool == tool}
    values = [n.params[key] for n in context.rule_nodes if n.tool == tool and key in n.params]
    fresh = [v for v in values if _fold(str(v)) not in used]
    return (fresh or values or [None])[0]


def _cover(nodes: list[Node], context: GroundingContext, existing: Mapping[str, Node], warnings: list[str]) -> list[Node]:
    query = _fold(context.query)
    taken = {*existing, *(n.id for n in nodes)}
    out = list(nodes)
    for rule in context.rule_nodes:
        if rule.type != "tool":
            continue
        keys = [k for k, v in rule.params.items() if k in _PLACE_KEYS and isinstance(v, str) and _named(v, query)]
        entities = [rule.params[k] for k in keys]
        if not entities or any(_mentions(n, entities) for n in out):
            continue
        if any(_computed(n, rule.tool, keys) for n in out) or not all(_known_place(e) for e in entities):
            continue  # the plan finds it from a result ("加拿大首都"), or the rules misread the query ("这六个城市")
        node_id = _free_id(taken)
        taken.add(node_id)
        out.append(Node(id=node_id, tool=rule.tool, params=dict(rule.params)))
        warnings.append(f"{node_id} {rule.tool}({', '.join(map(repr, entities))}) added by the rules: "
                        f"the query names it and it was {ADDED}")
    return out


def _named(value: str, query: str) -> bool:
    folded = _fold(value)
    return 0 < len(folded) <= 60 and folded != query and any(a in query for a in _aliases(value))


def _computed(node: Node, tool: str | None, keys: Sequence[str]) -> bool:
    """Whether ``node`` calls ``tool`` with one of ``keys`` taken from another node's result."""
    return node.tool == tool and any(isinstance(node.params.get(k), str) and "${" in node.params[k] for k in keys)


def _known_place(name: str) -> bool:
    """A place the offline tables know: only such a name is sure to be a place the query names, not a
    phrase the rules cut out of it."""
    from saber.tools.builtin.places import resolve_offline

    return resolve_offline(name) is not None


def _mentions(node: Node, entities: Sequence[str]) -> bool:
    """Whether any of ``node``'s arguments names one of ``entities`` (in any of its names)."""
    text = _fold(json.dumps(node.params, ensure_ascii=False))
    return any(alias in text for entity in entities for alias in _aliases(entity))


def _cascade(nodes: list[Node], dropped: dict[str, str], warnings: list[str]) -> list[Node]:
    """Nodes that depend on a dropped one are dropped too."""
    out = list(nodes)
    changed = True
    while changed:
        changed = False
        for node in list(out):
            gone = [d for d in node.depends_on if d in dropped]
            if gone:
                out.remove(node)
                dropped[node.id] = f"depends on dropped {gone[0]}"
                warnings.append(f"{node.id} dropped: it depends on dropped {gone[0]}")
                changed = True
    return out


def _free_id(taken: set[str]) -> str:
    k = 1
    while f"n{k}" in taken:
        k += 1
    return f"n{k}"


def example_section(system_prompt: str) -> str:
    """The worked-example part of a planner system prompt (from "Example"/"示例" on), or the lines
    that look like plan JSON when there is no such heading."""
    match = re.search(r"^(?:Example|示例)", system_prompt, re.MULTILINE)
    if match:
        return system_prompt[match.start():]
    return "\n".join(line for line in system_prompt.splitlines() if '"params"' in line)


def example_values(text: str) -> list[str]:
    """The parameter values in an example: strings under "params" (or, if no JSON parses, every
    quoted string that is not a structural key or value)."""
    start, end = text.find("["), text.rfind("]")
    if 0 <= start < end:
        with contextlib.suppress(ValueError):
            data = json.loads(text[start:end + 1])
            found: list[str] = []
            for item in data if isinstance(data, list) else []:
                if isinstance(item, dict) and isinstance(item.get("params"), dict):
                    found.extend(_strings(item["params"]))
            return found
    pairs = re.findall(r'"([^"\\]{1,40})"\s*:\s*"([^"\\]{1,80})"', text)
    return [value for key, value in pairs if key not in _STRUCTURAL]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _aliases(value: str) -> set[str]:
    """``value`` folded, plus every name of the city it is and its time zone (so 上海 grounds
    "Shanghai", and get_time("Asia/Shanghai") covers 北京)."""
    from saber.cities import lookup_city

    names = {_fold(value)}
    city = lookup_city(value)
    if city is not None:
        names.update(_fold(n) for n in (*city.all_names, city.timezone))
    return {n for n in names if n}


def _fold(text: str) -> str:
    return " ".join(text.casefold().split())


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _lang(language: str | None) -> Any:
    return language if language in ("zh", "en") else None
