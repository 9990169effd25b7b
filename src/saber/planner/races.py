"""Race groups the graph runtime accepts and can finish: the checks of ``GraphState``, applied
at parse time by taking nodes out of their group instead of rejecting the plan.

The runtime launches a race group only when every pending member is ready, and refuses a
member that depends, directly or through other nodes, on another member of its group (they
could never start together). Two rules follow:

- such a member leaves its group (the node stays, with its dependencies);
- groups may not wait for each other in a cycle. With each group contracted to one vertex, a
  cycle (g1's B needs g2's C while g2's D needs g1's A) would hold every member forever, so one
  group of the cycle is dissolved — the one whose first member comes last in plan order.

Nodes already in the graph (a replan's ``fixed`` ids) keep their group; only new nodes change.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence


def untangle_races(
    groups: Mapping[str, str | None],
    deps: Mapping[str, Sequence[str]],
    warnings: list[str],
    *,
    fixed: Collection[str] = (),
) -> dict[str, str | None]:
    """Node id → race group after the two rules above; every change is reported in ``warnings``.

    ``groups`` lists every node in plan order (ids in ``fixed`` first), ``deps`` their
    dependencies.
    """
    out = dict(groups)
    if not any(deps.get(node_id) for node_id, group in out.items() if group):
        return out  # a member that waits for nothing breaks neither rule (nor can its group close a cycle)
    _leave_own_group(out, deps, fixed, warnings)
    _break_group_cycles(out, deps, fixed, warnings)
    return out


def _leave_own_group(groups: dict[str, str | None], deps: Mapping[str, Sequence[str]],
                     fixed: Collection[str], warnings: list[str]) -> None:
    for node_id in list(groups):
        group = groups[node_id]
        if group is None or node_id in fixed:
            continue

        def same_group(other: str, me: str = node_id, g: str = group) -> bool:
            return other != me and groups.get(other) == g

        reached = _first_reached(node_id, deps, same_group)
        if reached is not None:
            groups[node_id] = None
            warnings.append(f"{node_id} removed from race group {group!r}: it depends on {reached} of the same group")


def _first_reached(start: str, deps: Mapping[str, Sequence[str]], hit: Callable[[str], bool]) -> str | None:
    """The first node upstream of ``start`` (depth first) for which ``hit`` holds."""
    seen: set[str] = set()
    stack = list(reversed(deps.get(start, ())))
    while stack:
        dep = stack.pop()
        if hit(dep):
            return dep
        if dep not in seen:
            seen.add(dep)
            stack.extend(reversed(deps.get(dep, ())))
    return None


def _break_group_cycles(groups: dict[str, str | None], deps: Mapping[str, Sequence[str]],
                        fixed: Collection[str], warnings: list[str]) -> None:
    order = {node_id: n for n, node_id in enumerate(groups)}
    for _ in range(len(groups)):
        cycle = _contracted_cycle(groups, deps)
        if cycle is None:
            return
        names = [v[1:] for v in dict.fromkeys(cycle) if v.startswith(_GROUP)]
        members = {g: [i for i in groups if groups[i] == g] for g in names}
        movable = [g for g in names if any(i not in fixed for i in members[g])]
        if not movable:
            return  # only nodes already in the graph: nothing a new plan can change
        victim = max(movable, key=lambda g: min(order[i] for i in members[g]))
        cleared = [i for i in members[victim] if i not in fixed]
        for node_id in cleared:
            groups[node_id] = None
        path = " -> ".join(f"group {v[1:]!r}" if v.startswith(_GROUP) else f"node {v}" for v in cycle)
        warnings.append(f"race groups wait for each other in a cycle ({path}): "
                        f"removed race group {victim!r} from {', '.join(cleared)}")


_GROUP = "\0"
"""Prefix of a contracted group's vertex (as in the runtime's own check): no real node id starts with NUL."""


def _contracted_cycle(groups: Mapping[str, str | None], deps: Mapping[str, Sequence[str]]) -> list[str] | None:
    """A cycle of the graph with each race group contracted to one vertex
    (``_GROUP`` + its name), as a closed path of vertices, or None."""
    vertex = {i: _GROUP + g if g else i for i, g in groups.items()}
    edges: dict[str, list[str]] = {}
    for node_id, node_deps in deps.items():
        source = vertex.get(node_id, node_id)
        for dep in node_deps:
            target = vertex.get(dep, dep)
            if target != source:
                edges.setdefault(source, []).append(target)
    if not any(v.startswith(_GROUP) for v in edges):
        return None  # without a group the graph is the (acyclic) plan itself
    colour: dict[str, int] = {}
    for root in edges:
        if root in colour:
            continue
        path: list[str] = [root]
        iters = [iter(edges.get(root, ()))]
        colour[root] = 1
        while iters:
            nxt = next(iters[-1], None)
            if nxt is None:
                colour[path.pop()] = 2
                iters.pop()
            elif colour.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            elif nxt not in colour:
                colour[nxt] = 1
                path.append(nxt)
                iters.append(iter(edges.get(nxt, ())))
    return None
