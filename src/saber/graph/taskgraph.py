"""``TaskGraph``: a validated DAG of nodes, with topological levels and the ready set."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping

from saber.graph.node import Node, NodeStatus


class GraphError(ValueError):
    """A graph that cannot run: duplicate ids, dangling dependencies or a cycle."""


def find_cycle(edges: Mapping[str, Iterable[str]]) -> list[str] | None:
    """A cycle as a path ``[a, b, ..., a]`` in ``vertex -> vertices it points to``, or None.
    Edges to vertices missing from ``edges`` are ignored."""
    white, grey, black = 0, 1, 2
    color = dict.fromkeys(edges, white)
    for start in edges:
        if color[start] != white:
            continue
        stack: list[tuple[str, Iterator[str]]] = [(start, iter(edges[start]))]
        color[start] = grey
        while stack:
            vertex, targets = stack[-1]
            target = next(targets, None)
            if target is None:
                color[vertex] = black
                stack.pop()
            elif target not in color or color[target] == black:
                continue
            elif color[target] == grey:
                path = [v for v, _ in stack]
                return [*path[path.index(target):], target]
            else:
                color[target] = grey
                stack.append((target, iter(edges[target])))
    return None


class TaskGraph:
    """A validated DAG of ``Node``s (unique ids, known dependencies, no cycles); ``levels()``
    gives the node ids in dependency order. ``GraphRuntime`` runs it."""

    def __init__(self, nodes: Iterable[Node], *, validate: bool = True) -> None:
        self.nodes: dict[str, Node] = {}
        duplicates: list[str] = []
        for node in nodes:
            if node.id in self.nodes:
                duplicates.append(node.id)
            self.nodes[node.id] = node
        if validate:
            if duplicates:
                raise GraphError(f"duplicate node ids: {', '.join(dict.fromkeys(duplicates))}")
            self.validate()

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes.values())

    def __len__(self) -> int:
        return len(self.nodes)

    def __getitem__(self, node_id: str) -> Node:
        return self.nodes[node_id]

    def validate(self) -> None:
        """Raise GraphError naming the problem: a missing dependency or a cycle's path."""
        for node in self.nodes.values():
            missing = [d for d in node.depends_on if d not in self.nodes]
            if missing:
                raise GraphError(f"node {node.id} depends on missing node(s): {', '.join(missing)}")
            if node.id in node.depends_on:
                raise GraphError(f"node {node.id} depends on itself")
        cycle = self.find_cycle()
        if cycle:
            raise GraphError("cycle: " + " -> ".join(cycle))

    def find_cycle(self) -> list[str] | None:
        """A cycle as a path ``[a, b, ..., a]`` following depends_on edges, or None."""
        return find_cycle({n.id: n.depends_on for n in self.nodes.values()})

    def levels(self) -> list[list[str]]:
        """Node ids grouped by depth (for display; the runtime does not wait level by level)."""
        depth: dict[str, int] = {}
        for node_id in self.topological_order():
            deps = [d for d in self.nodes[node_id].depends_on if d in depth]
            depth[node_id] = 1 + max((depth[d] for d in deps), default=-1)
        out: list[list[str]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
        for node_id, d in depth.items():
            out[d].append(node_id)
        return out

    def topological_order(self) -> list[str]:
        indegree = {n: sum(1 for d in node.depends_on if d in self.nodes) for n, node in self.nodes.items()}
        dependents = self.dependents()
        ready = deque(n for n, deg in indegree.items() if deg == 0)
        order: list[str] = []
        while ready:
            current = ready.popleft()
            order.append(current)
            for child in dependents[current]:
                indegree[child] -= 1
                if indegree[child] == 0:
                    ready.append(child)
        if len(order) != len(self.nodes):
            raise GraphError("cycle: " + " -> ".join(self.find_cycle() or []))
        return order

    def dependents(self) -> dict[str, list[str]]:
        """node id → ids of the nodes that depend on it."""
        out: dict[str, list[str]] = {n: [] for n in self.nodes}
        for node in self.nodes.values():
            for dep in node.depends_on:
                if dep in out:
                    out[dep].append(node.id)
        return out

    def ready(self) -> list[str]:
        """Pending nodes whose dependencies have all finished."""
        return [
            n.id for n in self.nodes.values()
            if n.status is NodeStatus.PENDING and all(self.nodes[d].status.finished for d in n.depends_on)
        ]

    def add(self, nodes: Iterable[Node]) -> None:
        """Add nodes (a replan); the graph is validated again and left unchanged if that fails."""
        new = list(nodes)
        seen: set[str] = set()
        for node in new:  # checked before anything changes, against the graph and within the batch
            if node.id in self.nodes or node.id in seen:
                raise GraphError(f"duplicate node id: {node.id}")
            seen.add(node.id)
        before = dict(self.nodes)
        self.nodes.update((node.id, node) for node in new)
        try:
            self.validate()
        except GraphError:
            self.nodes = before
            raise
