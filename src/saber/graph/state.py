"""The scheduler's bookkeeping over a TaskGraph: who waits on whom, what is ready, race groups,
failure propagation. Only the runtime's scheduler loop calls into it, so it needs no locks."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from saber.config.graph import GraphConfig
from saber.events import Event, NodeDone, RaceWon, Step
from saber.graph.node import Node, NodeStatus
from saber.graph.outcome import NodeOutcome, RaceOutcome
from saber.graph.taskgraph import GraphError, TaskGraph, find_cycle
from saber.graph.tool_output import jsonable

_OBSERVATION_CHARS = 2000


@dataclass(frozen=True, slots=True)
class Launch:
    """What the scheduler starts: one node, or the members of race group ``race`` as one race."""

    nodes: list[Node]
    race: str | None = None


class JoinableRace(Protocol):
    """A race under way (``graph.races.Race``) as the scheduler's bookkeeping sees it."""

    def join(self, node: Node) -> bool: ...


LOST_RACE = "lost race"
"""How a race loser's skip reason starts (what a restored graph recognises its losers by)."""


class GraphState:
    def __init__(self, graph: TaskGraph, config: GraphConfig) -> None:
        self.graph = graph
        self.config = config
        self.running: set[str] = set()
        self.finished_order: list[str] = [n.id for n in graph if n.status.finished]
        self._dependents: dict[str, list[str]] = {n: [] for n in graph.nodes}
        self._waiting: dict[str, int] = {}
        self._groups: dict[str, list[str]] = {}
        self._winner_of: dict[str, str] = {}
        """race loser id → winner id (their dependents receive the winner's result)."""
        self._ready: deque[str] = deque()
        self.races_may_grow = False
        """True while the plan streams: a race group may gain members after its race started,
        so it starts with the members it has and the others join it (``Race.join``)."""
        self._races: dict[str, JoinableRace] = {}
        """race group → its race under way (until its outcome is applied)."""
        self._late: dict[str, list[str]] = {}
        """race group → members ready after its race was decided, before its outcome arrived."""
        for node in graph:
            if node.status is NodeStatus.RUNNING:
                node.status = NodeStatus.PENDING
        self._index(list(graph))
        # a restored graph: recognise its race losers by what the graph recorded (the reason they
        # were skipped), not by this config's race groups: with racing now off, a loser must not
        # pass for a failure; and a member skipped because its input failed stays skipped
        winners = {n.race_group: n.id for n in reversed(list(graph)) if n.race_group and n.status is NodeStatus.DONE}
        for node in graph:
            winner = winners.get(node.race_group) if node.race_group else None
            if winner is not None and node.status is NodeStatus.SKIPPED and (node.error or "").startswith(LOST_RACE):
                self._winner_of[node.id] = winner

    # -- structure --------------------------------------------------------------------------------

    def _index(self, nodes: list[Node]) -> None:
        for node in nodes:
            self._dependents.setdefault(node.id, [])
            for dep in node.depends_on:
                self._dependents[dep].append(node.id)
            self._waiting[node.id] = sum(1 for d in node.depends_on if not self.graph[d].status.finished)
            if node.race_group and self.config.enable_racing:
                self._groups.setdefault(node.race_group, []).append(node.id)
            if node.status is NodeStatus.PENDING and self._waiting[node.id] == 0:
                self._ready.append(node.id)
        self._check_races()

    def _check_races(self) -> None:
        """A race member may not depend on another member of its group, and race groups may not
        wait on each other (through members or plain nodes): a group starts only when all its
        members are ready, so either would hold its members forever."""
        if not self._groups:
            return
        for group, members in self._groups.items():
            member_set = set(members)
            for member in members:
                seen: set[str] = set()
                stack = list(self.graph[member].depends_on)
                while stack:
                    dep = stack.pop()
                    if dep in member_set:
                        raise GraphError(f"race group {group!r}: {member} depends on {dep} of the same group")
                    if dep not in seen:
                        seen.add(dep)
                        stack.extend(self.graph[dep].depends_on)
        self._check_group_cycles()

    def _check_group_cycles(self) -> None:
        group_of = {m: g for g, members in self._groups.items() for m in members}

        def vertex(node_id: str) -> str:
            group = group_of.get(node_id)
            return f"\0{group}" if group is not None else node_id  # \0: cannot clash with a node id

        edges: dict[str, set[str]] = {}
        for node in self.graph:
            edges.setdefault(vertex(node.id), set()).update(vertex(d) for d in node.depends_on)
        for source, targets in edges.items():
            targets.discard(source)
        cycle = find_cycle(edges)
        if cycle:
            path = " -> ".join(v[1:] if v.startswith("\0") else f"node {v}" for v in cycle)
            raise GraphError(f"race groups wait on each other: {path} "
                             "(a race group starts only when every member is ready)")

    def add(self, nodes: Iterable[Node]) -> list[str]:
        """Add a replan's nodes (fresh copies, pending). Raises GraphError and changes nothing if invalid."""
        fresh = [Node.from_dict({**n.to_dict(), "status": "pending", "result": None, "error": None,
                                 "attempts": 0, "duration_ms": 0.0}) for n in nodes]
        if not fresh:
            return []
        groups_before = {g: list(m) for g, m in self._groups.items()}
        self.graph.add(fresh)
        try:
            self._index(fresh)
        except Exception:
            for node in fresh:
                del self.graph.nodes[node.id]
                for dep in node.depends_on:
                    self._dependents[dep].remove(node.id)
            for node in fresh:  # once every link is gone: a fresh node may depend on an earlier one
                self._dependents.pop(node.id, None)
                self._waiting.pop(node.id, None)
            self._groups = groups_before
            self._ready = deque(r for r in self._ready if r in self.graph.nodes)
            raise
        return [n.id for n in fresh]

    # -- readiness --------------------------------------------------------------------------------

    def settle(self, changed: list[Node], events: list[Event]) -> list[Launch]:
        """Skip ready nodes a failure blocks; hand ready members to their race under way;
        return what to launch now (a race group as one Launch)."""
        launch: list[Launch] = []
        while self._ready:
            node = self.graph[self._ready.popleft()]
            if node.status is not NodeStatus.PENDING:
                continue
            reason = self._blocked(node)
            if reason is not None:
                self._finish_node(node, NodeStatus.SKIPPED, None, reason, changed, events)
                continue
            won = self._race_won(node)
            if won is not None:  # written after its group's race was won
                self._winner_of[node.id] = won
                self._finish_node(node, NodeStatus.SKIPPED, None, f"{LOST_RACE} '{node.race_group}' to {won} "
                                  "(decided before this member could start)", changed, events)
                continue
            race = self._races.get(node.race_group or "") if self.config.enable_racing else None
            if race is not None:
                if race.join(node):
                    self._start(node)
                elif node.id not in self._late.setdefault(node.race_group or "", []):
                    self._late[node.race_group or ""].append(node.id)  # settled with the race's outcome
                continue
            group = self._pending_group(node)
            if len(group) <= 1:
                growing = self.races_may_grow and node.race_group and self.config.enable_racing
                launch.append(Launch([node], race=node.race_group if growing else None))
            elif all(self._waiting[m.id] == 0 and self._blocked(m) is None for m in group) or self.races_may_grow:
                ready = [m for m in group if self._waiting[m.id] == 0 and self._blocked(m) is None]
                launch.append(Launch(ready, race=node.race_group))
            else:
                continue  # held until the last member of its race group is ready
            for member in launch[-1].nodes:
                self._start(member)
        return launch

    def _race_won(self, node: Node) -> str | None:
        if not node.race_group or node.race_group not in self._groups:
            return None
        return next((m for m in self._groups[node.race_group] if self.graph[m].status is NodeStatus.DONE), None)

    def race_started(self, group: str, race: JoinableRace) -> None:
        """The runtime started ``group``'s race: members ready from now on join it."""
        self._races[group] = race

    def _start(self, node: Node) -> None:
        node.status = NodeStatus.RUNNING
        self.running.add(node.id)

    def _pending_group(self, node: Node) -> list[Node]:
        if not node.race_group or not self.config.enable_racing:
            return [node]
        return [self.graph[m] for m in self._groups[node.race_group] if self.graph[m].status is NodeStatus.PENDING]

    def _blocked(self, node: Node) -> str | None:
        for dep_id in node.depends_on:
            dep = self.graph[dep_id]
            if dep.status is NodeStatus.FAILED and self.config.on_failure == "skip":
                return f"{dep.id} failed: {dep.error}"
            if self.failure_skipped(dep) or dep.status is NodeStatus.CANCELLED:
                return dep.error or f"{dep.id} {dep.status.value}"
        return None

    def failure_skipped(self, node: Node) -> bool:
        """Skipped because something upstream failed (a race loser is skipped too, but not this)."""
        return node.status is NodeStatus.SKIPPED and node.id not in self._winner_of

    # -- outcomes ---------------------------------------------------------------------------------

    def finish(self, outcome: NodeOutcome, changed: list[Node], events: list[Event]) -> list[Node]:
        node = self.graph[outcome.node_id]
        node.duration_ms = outcome.duration_ms
        self._finish_node(node, outcome.status, outcome.result, outcome.error, changed, events)
        return [node] if node.status is NodeStatus.FAILED else []

    def finish_race(self, race: RaceOutcome, changed: list[Node], events: list[Event]) -> list[Node]:
        self._races.pop(race.group, None)
        late = self._late.pop(race.group, [])
        failed: list[Node] = []
        for i, outcome in enumerate(race.outcomes):
            if i == 1 and race.winner is not None:  # race_won: after the winner's done, before the losers'
                winner = self.graph[race.winner]
                events.append(RaceWon(race_group=race.group, winner=race.winner, tool=winner.target,
                                      losers=[o.node_id for o in race.outcomes[1:]]))
            if race.winner is not None and outcome.node_id != race.winner:
                self._winner_of[outcome.node_id] = race.winner
            failed += self.finish(outcome, changed, events)
        if race.winner is not None and len(race.outcomes) == 1:
            events.append(RaceWon(race_group=race.group, winner=race.winner,
                                  tool=self.graph[race.winner].target, losers=[]))
        self._settle_late_members(race, late, changed, events)
        return failed

    def _settle_late_members(self, race: RaceOutcome, late: list[str], changed: list[Node],
                             events: list[Event]) -> None:
        """Members the race did not run (written, or ready, after it was decided): with a winner
        they lost; without one, they start a race of their own."""
        members = self._groups.get(race.group, [])
        rest = [m for m in members if self.graph[m].status is NodeStatus.PENDING]
        if race.winner is None:
            self._ready.extend(m for m in late if m in rest)
            return
        for member in rest:
            self._winner_of[member] = race.winner
            self._finish_node(self.graph[member], NodeStatus.SKIPPED, None, f"{LOST_RACE} '{race.group}' to "
                              f"{race.winner} (decided before this member could start)", changed, events)

    def _finish_node(self, node: Node, status: NodeStatus, result: Any, error: str | None,
                     changed: list[Node], events: list[Event]) -> None:
        node.status, node.result, node.error = status, result, error
        self.running.discard(node.id)
        self.finished_order.append(node.id)
        changed.append(node)
        events.append(NodeDone(id=node.id, tool=node.target, status=status.value, duration_ms=node.duration_ms,
                               attempts=node.attempts, error=error))
        if status is NodeStatus.DONE:
            events.append(Step(kind="observation", content=_text(result), tool=node.target, node_id=node.id))
        elif status is NodeStatus.FAILED:
            events.append(Step(kind="observation", content=f"error: {error}", tool=node.target, node_id=node.id))
        for child in self._dependents[node.id]:
            self._waiting[child] -= 1
            if self._waiting[child] == 0:
                self._ready.append(child)
        if self.failure_skipped(node) and node.race_group in self._groups:
            # its race group may now be complete without it
            self._ready.extend(m for m in self._groups[node.race_group] if self._waiting[m] == 0)
        if status is NodeStatus.FAILED and self.config.on_failure == "skip" or self.failure_skipped(node):
            for child in self._dependents[node.id]:  # skip the whole blocked subtree now, not later
                if self.graph[child].status is NodeStatus.PENDING:
                    reason = self._blocked(self.graph[child]) or error
                    self._finish_node(self.graph[child], NodeStatus.SKIPPED, None, reason, changed, events)

    def fail_stranded(self, error: str, changed: list[Node], events: list[Event]) -> list[str]:
        """Fail every node still pending or running (the scheduler drained without them)."""
        stranded = [n for n in self.graph if n.status in (NodeStatus.PENDING, NodeStatus.RUNNING)]
        for node in stranded:
            node.status, node.error = NodeStatus.FAILED, error
            self.running.discard(node.id)
            self.finished_order.append(node.id)
            changed.append(node)
            events.append(NodeDone(id=node.id, tool=node.target, status=node.status.value,
                                   duration_ms=node.duration_ms, attempts=node.attempts, error=error))
        return [n.id for n in stranded]

    def cancel_rest(self, changed: list[Node], events: list[Event]) -> None:
        for node in self.graph:
            if node.status in (NodeStatus.PENDING, NodeStatus.RUNNING):
                started = node.status is NodeStatus.RUNNING
                node.status, node.error = NodeStatus.CANCELLED, "cancelled while running" if started else "cancelled"
                self.running.discard(node.id)
                changed.append(node)
                events.append(NodeDone(id=node.id, tool=node.target, status=node.status.value,
                                       duration_ms=node.duration_ms, attempts=node.attempts, error=node.error))

    # -- inputs -----------------------------------------------------------------------------------

    def inputs(self, node: Node) -> dict[tuple[str, str], Any]:
        """(dependency id, its tool or agent) → what the node receives from it."""
        out: dict[tuple[str, str], Any] = {}
        for dep_id in node.depends_on:
            dep = self.graph[dep_id]
            if dep.status is NodeStatus.DONE:
                out[(dep.id, dep.target)] = dep.result
            elif dep.id in self._winner_of:
                out[(dep.id, dep.target)] = self.graph[self._winner_of[dep.id]].result
            elif dep.status is NodeStatus.FAILED:
                out[(dep.id, dep.target)] = {"error": dep.error, "status": "failed"}
        return out


def _text(result: Any) -> str:
    try:
        text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):  # a result that was not made safe (see tool_output)
        text = json.dumps(jsonable(result), ensure_ascii=False)
    return text if len(text) <= _OBSERVATION_CHARS else text[:_OBSERVATION_CHARS] + "…"
