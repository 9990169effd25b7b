"""Nodes handed to a running graph while the planner is still writing it.

``GraphRuntime.open_feed()`` before ``run()`` keeps the run going while the plan streams (a
drained graph is not finished while its feed is open); ``add_nodes`` hands it nodes as the
incremental parser yields them, ``reconcile`` applies the final plan's verdict, ``close_feed``
says the plan is complete. All of it reaches the scheduler loop as messages, so the graph is
still changed from one place only.

A node whose dependencies are all in the graph is added at once (and starts at once if they
have finished); one naming a node not yet written waits here until that node arrives. A race
group starts with its first member; members written later join the race while it is undecided,
and lose at once if it was already won (``GraphState.settle``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from saber.events import Error, Event, NodeAdded
from saber.graph.node import Node, NodeStatus
from saber.graph.outcome import NodeOutcome
from saber.graph.state import GraphState
from saber.graph.taskgraph import GraphError, TaskGraph


@dataclass(frozen=True, kw_only=True, slots=True)
class FeedNodes:
    nodes: list[Node]


@dataclass(frozen=True, kw_only=True, slots=True)
class FeedReconcile:
    """The final plan's verdict on nodes already handed over: new versions, and ids it dropped."""

    changed: dict[str, Node] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True, slots=True)
class FeedClosed:
    pass


FeedMessage = FeedNodes | FeedReconcile | FeedClosed


class NodeFeed:
    """Only the scheduler loop calls ``apply``."""

    def __init__(self, graph: TaskGraph, state: GraphState) -> None:
        self.graph = graph
        self.state = state
        self.open = True
        self._waiting: list[Node] = []

    def apply(self, message: FeedMessage, changed: list[Node], events: list[Event]) -> bool:
        """Apply one message; True when the graph gained nodes (it must be saved again)."""
        if isinstance(message, FeedReconcile):
            self._reconcile(message, changed, events)
            return False
        if isinstance(message, FeedClosed):
            self.open = False
            self.state.races_may_grow = False
        else:
            self._waiting.extend(message.nodes)
        added = self._add_ready(events)
        if not self.open and self._waiting:
            for node in self._waiting:
                missing = [d for d in node.depends_on if d not in self.graph.nodes]
                events.append(Error(message=f"streamed node {node.id} not run: it depends on "
                                            f"{', '.join(missing) or 'nodes'} that the plan never wrote", where="graph"))
            self._waiting = []
        return added

    def _add_ready(self, events: list[Event]) -> bool:
        added = False
        progress = True
        while progress:
            progress = False
            for node in list(self._waiting):
                if node not in self._waiting or not all(d in self.graph.nodes for d in node.depends_on):
                    continue  # (added already with an earlier member of its race group)
                group = [m for m in self._waiting if node.race_group and m.race_group == node.race_group] or [node]
                for member in group:
                    self._waiting.remove(member)
                try:
                    self.state.add(group)
                except GraphError as exc:
                    events.append(Error(message=f"streamed node(s) {', '.join(m.id for m in group)} rejected: {exc}",
                                        where="graph"))
                    continue
                events.extend(NodeAdded(node=self.graph[m.id].to_dict()) for m in group)
                added = progress = True
        return added

    def _reconcile(self, message: FeedReconcile, changed: list[Node], events: list[Event]) -> None:
        for node_id, final in message.changed.items():
            node = self.graph.nodes.get(node_id)
            if node is None:
                self._waiting = [final if w.id == node_id else w for w in self._waiting]
            elif node.status is NodeStatus.PENDING and list(final.depends_on) == list(node.depends_on) \
                    and final.race_group == node.race_group:
                node.type, node.tool, node.agent = final.type, final.tool, final.agent
                node.goal, node.params = final.goal, dict(final.params)
                changed.append(node)
                events.append(NodeAdded(node=node.to_dict(), replaces=True))
            else:
                events.append(Error(message=f"node {node_id} was {_state(node)} before the final plan changed it "
                                            f"(to {final.target} {final.params}); its result is kept from the "
                                            "streamed version", where="graph"))
        for node_id in message.dropped:
            node = self.graph.nodes.get(node_id)
            if node is None:
                self._waiting = [w for w in self._waiting if w.id != node_id]
            elif node.status is NodeStatus.PENDING:
                self.state.finish(NodeOutcome(node_id=node_id, status=NodeStatus.SKIPPED,
                                              error="removed by the final plan"), changed, events)
            else:
                events.append(Error(message=f"node {node_id} was {_state(node)} before the final plan dropped it; "
                                            "its result is kept and reported", where="graph"))


def _state(node: Node) -> str:
    return "running" if node.status is NodeStatus.RUNNING else f"already {node.status.value}"
