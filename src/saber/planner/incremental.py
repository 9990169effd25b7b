"""``IncrementalPlanParser``: a planner's output read while it streams, one node at a time.

Every shape ``parse_plan`` understands (JSON in any of its forms, text tool-call dialects,
pythonic calls, LLMCompiler's numbered plan) is read the same way: when a chunk brings a
boundary (a closing bracket, brace or tag, a line end), the text so far is parsed with
``parse_plan(partial=True)`` — so the same cleaning, repair, whitelist, argument and placeholder
checks apply to every node, while nothing that needs the whole plan is decided on a prefix
(grounding adds no node for a place the query names: the model may write it next) — and the
nodes found are yielded, except:

* the last node of the prefix, unless the text closes it (a JSON node whose closing brace
  arrived, see ``ParsedPlan.last_node_closed``): its object, call or line may still be growing
  (a truncated string repaired to ``"Par"`` reads as a complete node); such a node is trusted
  once another node follows it, or the stream has ended;
* a node whose dependency validation changed (it names a node not yet written, or a cycle was
  broken through it), whose placeholders name a node not yet written, or whose id the parser
  chose (a later node may take it): it waits until a later prefix no longer changes it, or for
  the final parse;
* anything while the text is inside an unfinished reasoning block (a draft is not the plan).

A node is yielded after its dependencies, so a node yielded is one the final plan keeps as it
was yielded. Nodes already yielded are never yielded again; ``finish`` parses the whole text as
today and says which yielded nodes the final plan changed or dropped. Long outputs are not
re-parsed on every boundary (see ``max_incremental_chars``): past that size they are parsed
once, at the end.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from saber.graph.node import Node
from saber.graph.placeholders import canonicalise
from saber.planner.clean import in_reasoning
from saber.planner.parse import MAX_PLAN_NODES, parse_plan
from saber.planner.result import ParsedPlan, PlanParseError
from saber.planner.validate import norm_id
from saber.tools.base import Tool

_BOUNDARY = re.compile(r"[}\])>\n]")
_HELD = re.compile(r"^(?:(?P<a>[^:\s]+): removed (?:its )?dependenc"
                   r"|cycle .*: removed the dependency of (?P<b>\S+) on |id \S+ clashes with .*; renamed (?P<c>\S+)$)")
_UNNAMED = re.compile(r"^(?P<id>[^:\s]+): the node has no id")
_NAMED_SHAPES = frozenset({"ideal", "legacy", "wrapped", "single_object"})
"""Shapes whose nodes carry ids: an id given to a node without one may change once a later node
takes it. (Calls in tool-call tags or pythonic calls have none: their ids go by position.)"""


@dataclass(frozen=True, kw_only=True, slots=True)
class FinalPlan:
    """The whole output parsed as today, compared with what was yielded while it streamed."""

    plan: ParsedPlan | None
    """None when the whole output has no usable plan (``error`` says why)."""
    error: PlanParseError | None = None
    late: list[Node] = field(default_factory=list)
    """Nodes of the final plan not yielded while streaming (the last one, held ones)."""
    changed: dict[str, Node] = field(default_factory=dict)
    """Yielded node id → the final plan's different version of it."""
    dropped: list[str] = field(default_factory=list)
    """Yielded node ids the final plan does not have."""


class IncrementalPlanParser:
    """``feed(chunk)`` → nodes complete so far (each once); ``finish()`` → the whole plan."""

    def __init__(self, tools: Mapping[str, Tool], *, agents: Mapping[str, str] | None = None,
                 max_nodes: int = MAX_PLAN_NODES, max_incremental_chars: int = 16_384) -> None:
        self.tools = tools
        self.agents = dict(agents or {})
        self.max_nodes = max_nodes
        self.max_incremental_chars = max_incremental_chars
        """Past this many characters the text is no longer re-parsed per boundary (each parse is
        linear in the text, so re-parsing a huge output would be quadratic)."""
        self._parts: list[str] = []
        self._size = 0
        self.yielded: dict[str, Node] = {}
        """Node id → the node as yielded, in order."""

    @property
    def text(self) -> str:
        return "".join(self._parts)

    def feed(self, chunk: str) -> list[Node]:
        """Take the next piece of the output; return the nodes it completed (maybe none)."""
        if not isinstance(chunk, str):
            raise TypeError(f"a plan chunk must be text, got {type(chunk).__name__}")
        if not chunk:
            return []
        self._parts.append(chunk)
        self._size += len(chunk)
        if self._size > self.max_incremental_chars or len(self.yielded) >= self.max_nodes \
                or not _BOUNDARY.search(chunk) or in_reasoning(self.text):
            return []
        try:
            plan = parse_plan(self.text, self.tools, agents=self.agents, max_nodes=self.max_nodes, partial=True)
        except PlanParseError:
            return []
        return self._new(plan.nodes if plan.last_node_closed else plan.nodes[:-1], plan)

    def finish(self, *, broken: bool = False) -> FinalPlan:
        """Parse the whole output as ``parse_plan`` does and reconcile it with what was yielded.
        ``broken``: the stream broke, so the text is only the start of the plan (read as a prefix)."""
        try:
            plan = parse_plan(self.text, self.tools, agents=self.agents, max_nodes=self.max_nodes, partial=broken)
        except PlanParseError as exc:
            return FinalPlan(plan=None, error=exc, dropped=list(self.yielded))
        final = {n.id: n for n in plan.nodes}
        late = [n for n in plan.nodes if n.id not in self.yielded]
        changed = {i: final[i] for i, n in self.yielded.items() if i in final and _same(final[i]) != _same(n)}
        dropped = [i for i in self.yielded if i not in final]
        return FinalPlan(plan=plan, late=late, changed=changed, dropped=dropped)

    def _new(self, nodes: list[Node], plan: ParsedPlan) -> list[Node]:
        held = {m.group("a") or m.group("b") or m.group("c") for w in plan.warnings if (m := _HELD.match(w))}
        if plan.shape in _NAMED_SHAPES:
            held |= {m.group("id") for w in plan.warnings if (m := _UNNAMED.match(w))}
        written = {n.id for n in nodes} | set(self.yielded)
        held |= {n.id for n in nodes if _names_unwritten(n, written)}
        out: list[Node] = []
        waiting = [n for n in nodes if n.id not in self.yielded and n.id not in held]
        progress = True
        while progress:  # a node comes after its dependencies, whatever order they were written in
            progress = False
            for node in list(waiting):
                if all(d in self.yielded for d in node.depends_on):
                    self.yielded[node.id] = node
                    out.append(node)
                    waiting.remove(node)
                    progress = True
        return out


def _names_unwritten(node: Node, written: set[str]) -> bool:
    """Whether a placeholder in ``node``'s params or goal names a node not written yet: validation
    leaves such a placeholder as text, with no dependency, until that node is written."""
    unwritten: list[str] = []

    def resolve(ref: str) -> None:
        if norm_id(ref) not in written:
            unwritten.append(ref)

    canonicalise([node.params, node.goal], resolve)
    return bool(unwritten)


def _same(node: Node) -> dict[str, Any]:
    return node.to_dict()
