"""Validating raw nodes into ``Node``s, every change reported as a warning.

In order: ids filled and de-duplicated; unknown tools and agents dropped (whitelist); params
checked and coerced with ``Tool.validate`` — except fields holding placeholders, whose types can
only be checked once the upstream result is in (run time); placeholders become dependencies;
dependencies that point nowhere removed; nodes whose placeholders name a dropped node dropped;
each cycle broken at the one edge that closes it; and race groups the runtime would refuse or
never finish untangled (``races.py``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from saber.graph.node import Node
from saber.graph.placeholders import canonicalise, references
from saber.graph.taskgraph import TaskGraph
from saber.planner.names import resolve_name
from saber.planner.races import untangle_races
from saber.planner.shapes import RawNode, params_object
from saber.tools.base import Tool
from saber.tools.coerce import unknown_keys
from saber.tools.errors import ToolArgumentError

_NODE_ID = re.compile(r"n\d+")
"""The ids the planner prompt asks for: ``${n9}`` naming none of them is a placeholder gone wrong
(``${HOME}`` may be text a tool takes)."""


@dataclass(frozen=True, kw_only=True)
class Validated:
    nodes: list[Node]
    warnings: list[str] = field(default_factory=list)
    dropped: dict[str, str] = field(default_factory=dict)
    """Dropped node id → why."""


def norm_id(value: Any) -> str | None:
    """``1``/``"1"`` → ``"n1"`` (the prompt asks for n1, n2 …); ``"$n1"``/``"{n1}"`` → ``"n1"``."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = str(value).strip().lstrip("$").strip("{}").strip()
    if not text:
        return None
    return f"n{text}" if text.isdigit() else text


@dataclass
class _Work:
    raw: RawNode
    id: str
    kind: str = "tool"
    name: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    goal: str = ""
    refs: list[str] = field(default_factory=list)
    goal_refs: list[str] = field(default_factory=list)
    """Nodes named in a sub-agent's goal ("根据 $n1 写报告"): dependencies, but text stays as written."""
    deps: list[str] = field(default_factory=list)
    repeats: str | None = None
    """The earlier node this one repeats word for word, id included."""


def validate_nodes(
    raw: Sequence[RawNode],
    tools: Mapping[str, Tool],
    *,
    agents: Mapping[str, str] | None = None,
    existing: Mapping[str, Node] | None = None,
    limit: int | None = None,
    placeholders: bool = True,
    partial: bool = False,
) -> Validated:
    """Nodes ready for a TaskGraph. ``existing`` are nodes already in the graph (a replan): new
    ids must not clash with them, new nodes may depend on them. ``limit`` caps the new nodes.

    ``placeholders=False`` takes params and goals as literal text (the rule planner copies the
    user's query into them): nothing in them becomes a dependency or is rewritten.

    ``partial=True``: ``raw`` is the start of a plan still being written (streamed planning): an id
    left free, which depends on the ids written later, is reported. A model's plan is grounded
    afterwards (``grounding.ground_validated``, called by ``parse_plan``)."""
    warnings: list[str] = []
    dropped: dict[str, str] = {}
    existing = existing or {}
    agents = agents or {}
    work, alias = _assign_ids(raw, existing, warnings, partial=partial)

    def drop(item: _Work, reason: str) -> None:
        dropped[item.id] = reason
        warnings.append(f"{item.id} dropped: {reason}")

    kept: list[_Work] = []
    for item in work:
        if item.repeats is not None:
            drop(item, f"it repeats {item.repeats} word for word (same id, same call)")
            continue
        problem = _check(item, tools, agents, alias if placeholders else None, existing)
        if problem is None and limit is not None and len(kept) >= limit:
            problem = f"more than the {limit} new node(s) allowed"
        if problem is not None:
            drop(item, problem)
        else:
            kept.append(item)
            warnings.extend(_unknown_arguments(item, tools))

    kept = _cascade(kept, dropped, warnings)
    for item in kept:
        _resolve_deps(item, alias, existing, dropped, warnings)
    broken = _break_cycles(kept, warnings)
    if broken:  # a node whose placeholder lost its edge would run with the placeholder's text
        for node_id, target in broken.items():
            drop(next(i for i in kept if i.id == node_id),
                 f"its params need the result of {target}, which depends on it (a cycle)")
        kept = _cascade([i for i in kept if i.id not in dropped], dropped, warnings)
        for item in kept:
            item.deps = [d for d in item.deps if d not in dropped]
    groups = untangle_races(
        {**{n.id: n.race_group for n in existing.values()}, **{i.id: _race_group(i.raw.get("race_group")) for i in kept}},
        {**{n.id: n.depends_on for n in existing.values()}, **{i.id: i.deps for i in kept}},
        warnings, fixed=existing.keys())
    nodes = [
        Node(id=i.id, type="sub_agent" if i.kind == "sub_agent" else "tool",
             tool=i.name if i.kind == "tool" else None, agent=i.name if i.kind == "sub_agent" else None,
             goal=i.goal, params=i.params, depends_on=i.deps, race_group=groups[i.id])
        for i in kept
    ]
    return Validated(nodes=nodes, warnings=warnings, dropped=dropped)


def _assign_ids(raw: Sequence[RawNode], existing: Mapping[str, Node], warnings: list[str], *,
                partial: bool = False) -> tuple[list[_Work], dict[str, str]]:
    """Ids as written, else the first free ``nK``. A free id depends on the ids written later, so
    on a ``partial`` plan it is reported (a streaming reader holds such a node to the end)."""
    declared = {norm_id(r.get("id")) for r in raw} - {None}
    taken = set(existing)
    alias: dict[str, str] = {}
    work: list[_Work] = []
    counter = 1

    def next_free() -> str:
        nonlocal counter
        while f"n{counter}" in taken or f"n{counter}" in declared:
            counter += 1
        return f"n{counter}"

    first: dict[str, tuple[str, RawNode]] = {}
    for r in raw:
        rid = norm_id(r.get("id"))
        if rid is not None and rid in first and first[rid][1] == r and rid not in existing:
            work.append(_Work(raw=r, id=f"{first[rid][0]}#{len(work) + 1}", repeats=first[rid][0]))
            continue  # the same node written again (a looping model), not a second call
        if rid is None:
            fid = next_free()
            if partial:
                warnings.append(f"{fid}: the node has no id; named {fid} for now")
        elif rid in taken:
            fid = next_free()
            what = "an existing node" if rid in existing else "an earlier node"
            warnings.append(f"id {rid} clashes with {what}; renamed {fid}")
        else:
            fid = rid
        taken.add(fid)
        if rid is not None and rid not in alias:
            alias[rid] = fid
            first[rid] = (fid, r)
        work.append(_Work(raw=r, id=fid))
    return work, alias


def _resolver(alias: Mapping[str, str], existing: Mapping[str, Node], self_id: str) -> Any:
    def resolve(ref: Any) -> str | None:
        rid = norm_id(ref)
        if rid is None:
            return None
        target = alias.get(rid) or (rid if rid in existing else None)
        if target == self_id:  # a renamed node naming its old id means the existing node of that id
            return rid if rid in existing and rid != self_id else None
        return target

    return resolve


def _check(item: _Work, tools: Mapping[str, Tool], agents: Mapping[str, str],
           alias: Mapping[str, str] | None, existing: Mapping[str, Node]) -> str | None:
    """Fill in kind, name, params, goal and placeholder refs (none when ``alias`` is None: the
    params are literal); the reason to drop, or None."""
    problem = _target(item, tools, agents)
    if problem:
        return problem
    params, problem = params_object(item.raw.get("params"))
    if params is None:
        return problem
    goal = item.raw.get("goal") if isinstance(item.raw.get("goal"), str) else ""
    if item.kind == "sub_agent" and not goal:
        for key in ("goal", "task", "query"):
            if isinstance(params.get(key), str) and params[key].strip():
                goal = params.pop(key) if key != "query" else params[key]
                break
    item.goal = (goal or "").strip()
    if alias is not None:
        resolve = _resolver(alias, existing, item.id)
        params, item.refs = canonicalise(params, resolve)
        _, item.goal_refs = canonicalise(item.goal, resolve)
        dangling = [r for r in references(params) if _NODE_ID.fullmatch(r) and r not in item.refs]
        if dangling:  # it would run with the placeholder's text as its argument
            return f"its params use ${{{dangling[0]}}}, which names no node of the plan"
    if item.kind == "sub_agent":
        item.params = params
        return None
    deferred = {k for k, v in params.items() if set(references(v)) & set(item.refs)} if item.refs else set()
    checked, problem = _validate_args(tools[item.name], params, deferred)
    if checked is None:
        return problem
    item.params = checked
    return None


def _target(item: _Work, tools: Mapping[str, Tool], agents: Mapping[str, str]) -> str | None:
    raw = item.raw
    tool, agent = _name(raw.get("tool")), _name(raw.get("agent"))
    sub_agent = raw.get("type") == "sub_agent" or (agent is not None and tool is None)
    name = (agent or tool) if sub_agent else (tool or agent)
    if name is None:
        return "names no tool or agent"
    name = resolve_name(name, {**tools, **agents})
    if not sub_agent and name not in tools and name in agents:
        sub_agent = True
    elif sub_agent and name not in agents and name in tools:
        sub_agent = False
    item.kind, item.name = ("sub_agent" if sub_agent else "tool"), name
    if sub_agent and name not in agents:
        known = ", ".join(sorted(agents)) or "none"
        return f"unknown agent {name!r} (known: {known})"
    if not sub_agent and name not in tools:
        return f"unknown tool {name!r} (known: {', '.join(sorted(tools)) or 'none'})"
    return None


def _name(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    return value.strip()


def _unknown_arguments(item: _Work, tools: Mapping[str, Tool]) -> list[str]:
    """Arguments the tool does not take: a tool that refuses them (strict) fails validation; the
    others ignore them, and the repair step is told so."""
    tool = tools.get(item.name or "") if item.kind == "tool" else None
    if tool is None:
        return []
    return [f"{item.id}: {key!r} is not a parameter of {tool.name}"
            for key in unknown_keys(tool.schema, item.raw.get("params"))]


def _validate_args(tool: Tool, params: dict[str, Any], deferred: set[str]) -> tuple[dict[str, Any] | None, str | None]:
    """Validated params; fields in ``deferred`` (placeholders) keep their text for run time."""
    concrete = {k: v for k, v in params.items() if k not in deferred}
    try:
        checked = tool.validate(concrete)
    except ToolArgumentError as exc:
        remaining = [e for e in exc.errors if _field(e) not in deferred]
        if remaining:
            return None, f"{tool.name}: " + "; ".join(e.removeprefix(f"{tool.name}: ") for e in remaining)
        checked = _with_stand_ins(tool, concrete, deferred)
    checked.update({k: params[k] for k in deferred})
    return checked, None


def _field(error: str) -> str:
    head = error.split(":", 1)[0].strip()
    return head.split(".", 1)[0].split("[", 1)[0]


_STAND_INS: dict[str, Any] = {"string": "x", "integer": 0, "number": 0, "boolean": False, "array": [], "object": {}}


def _with_stand_ins(tool: Tool, concrete: dict[str, Any], deferred: set[str]) -> dict[str, Any]:
    """Validate the concrete fields while required placeholder fields are still missing."""
    props = tool.schema.get("properties", {})
    trial = dict(concrete)
    for key in deferred:
        prop = props.get(key, {})
        kind = prop.get("type") if isinstance(prop.get("type"), str) else "string"
        trial[key] = prop["enum"][0] if prop.get("enum") else _STAND_INS.get(kind, "x")
    try:
        return tool.validate(trial)
    except ToolArgumentError:
        return dict(concrete)


def _cascade(kept: list[_Work], dropped: dict[str, str], warnings: list[str]) -> list[_Work]:
    """Drop nodes whose placeholders need a dropped node's result, until nothing changes."""
    changed = True
    while changed:
        changed = False
        for item in list(kept):
            lost = [r for r in item.refs if r in dropped]
            if lost:
                dropped[item.id] = f"its params use the result of {', '.join(lost)}, which was dropped"
                warnings.append(f"{item.id} dropped: {dropped[item.id]}")
                kept.remove(item)
                changed = True
    return kept


def _resolve_deps(item: _Work, alias: Mapping[str, str], existing: Mapping[str, Node],
                  dropped: Mapping[str, str], warnings: list[str]) -> None:
    deps: list[str] = []
    raw = item.raw.get("depends_on")
    entries = raw if isinstance(raw, list) else ([] if raw in (None, "") else
                                                  [p for p in str(raw).replace("，", ",").split(",") if p.strip()])
    for entry in entries:
        target = alias.get(norm_id(entry) or "") or (norm_id(entry) if norm_id(entry) in existing else None)
        if target is None:
            warnings.append(f"{item.id}: removed dependency on {entry!r}, which names no node")
        elif target == item.id:
            warnings.append(f"{item.id}: removed its dependency on itself")
        elif target in dropped:
            warnings.append(f"{item.id}: removed dependency on {target}, which was dropped")
        elif target not in deps:
            deps.append(target)
    for ref in [*item.refs, *item.goal_refs]:
        if ref not in deps and ref not in dropped:
            deps.append(ref)
    item.deps = deps


def _break_cycles(kept: list[_Work], warnings: list[str]) -> dict[str, str]:
    """Remove, for each cycle, the edge that closes it: the one pointing forward in plan order,
    preferring one no placeholder needs. Returns node id → the node whose result a placeholder
    of it needed through a removed edge (such a node cannot run as written)."""
    unresolved: dict[str, str] = {}
    if not any(i.deps for i in kept):
        return unresolved
    by_id = {i.id: i for i in kept}
    order = {i.id: n for n, i in enumerate(kept)}
    for _ in range(sum(len(i.deps) for i in kept)):
        graph = TaskGraph([Node(id=i.id, tool="x", depends_on=i.deps) for i in kept], validate=False)
        cycle = graph.find_cycle()
        if not cycle:
            return unresolved
        edges = list(zip(cycle, cycle[1:], strict=False))  # (node, the node it depends on)
        forward = [e for e in edges if order[e[1]] >= order[e[0]]] or edges
        plain = [e for e in edges if e[1] not in by_id[e[0]].refs]
        source, target = ([e for e in forward if e in plain] or plain or forward)[0]
        by_id[source].deps.remove(target)
        if target in by_id[source].refs:
            unresolved[source] = target
        warnings.append(f"cycle {' -> '.join(cycle)}: removed the dependency of {source} on {target}")
    return unresolved


def _race_group(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    text = str(value).strip()
    return text or None
