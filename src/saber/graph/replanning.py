"""Replanning a running graph: the replan budget, the replanner's worker and applying what it returns."""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from saber.config.graph import GraphConfig
from saber.events import Error, Event, Replan
from saber.graph.agents import Replanner, ReplanRequest
from saber.graph.node import Node, NodeStatus
from saber.graph.state import GraphState
from saber.graph.taskgraph import GraphError, TaskGraph

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True, slots=True)
class ReplanDone:
    """What the replanner returned (or why it failed), sent to the scheduler loop."""

    request: ReplanRequest
    nodes: list[Node]
    error: str | None = None
    declined: bool = False
    """The replanner returned None: it saw nothing to replan."""


class Replanning:
    """At most one replan under way; only the scheduler loop calls ``start``, ``after_failure`` and ``apply``."""

    def __init__(
        self, replanner: Replanner | None, *, graph: TaskGraph, state: GraphState, config: GraphConfig,
        task_id: str, live: Callable[[], bool],
        spawn: Callable[[Coroutine[Any, Any, None], str], asyncio.Task[None]],
        report: Callable[[ReplanDone], None],
        streaming: Callable[[], bool] = lambda: False,
    ) -> None:
        self.replanner = replanner
        self.graph = graph
        self.state = state
        self.config = config
        self.task_id = task_id
        self.live = live
        self.spawn = spawn
        self.report = report
        self.streaming = streaming
        """True while the planner still writes the graph: a replan then could take ids the rest of the
        plan uses, so a failure waits (``due``) until the plan is complete."""
        self.used = 0
        self.task: asyncio.Task[None] | None = None
        self.due: str | None = None
        """A failure seen while a replan was under way (or out of budget), to replan on next."""
        self.graph_changed = False
        """Nodes were added since the graph was last saved."""
        self.nothing_to_add = False
        """The replanner, asked after the graph drained, added nothing: the run is over."""

    def start(self, reason: str, detail: str) -> bool:
        if self.replanner is None or self.task is not None or self.used >= self.config.max_replan:
            return False
        if not self.live():  # nobody would await it: no model call for a stopped task
            return False
        if self.streaming():
            return False
        self.used += 1
        self.due = None
        request = ReplanRequest(
            reason="failure" if reason == "failure" else "drained", detail=detail,
            nodes=[copy.deepcopy(n) for n in self.graph],
            failed=[n.id for n in self.graph if n.status is NodeStatus.FAILED],
            used=self.used - 1, max=self.config.max_replan,
        )
        self.task = self.spawn(self._worker(request), "saber-replan")
        return True

    def plan_complete(self) -> None:
        """The streamed plan is complete: replan now on a failure that waited for it."""
        if self.due is not None:
            self.start("failure", self.due)

    def after_failure(self, failed: list[Node]) -> None:
        """Replan on these failures now, or as soon as the replan under way is applied."""
        detail = "; ".join(f"{n.id} failed: {n.error}" for n in failed)
        if not self.start("failure", detail):
            self.due = detail

    async def _worker(self, request: ReplanRequest) -> None:
        assert self.replanner is not None
        try:
            proposed = await self.replanner(request)
            nodes = [] if proposed is None else list(proposed)
        except Exception as exc:
            log.exception("replanner failed")
            self.report(ReplanDone(request=request, nodes=[], error=f"{type(exc).__name__}: {exc}"))
        else:
            self.report(ReplanDone(request=request, nodes=nodes, declined=proposed is None))

    def apply(self, done: ReplanDone, events: list[Event]) -> None:
        self.task = None
        if done.declined:  # not a replan: the budget is given back, nothing is announced
            self.used -= 1
            self.nothing_to_add = done.request.reason == "drained"
        elif done.error is not None:
            events.append(Error(message=f"replanning failed: {done.error}", where="replan"))
        else:
            try:
                added = self.state.add(done.nodes)
            except GraphError as exc:
                events.append(Error(message=f"replan rejected: {exc}", where="replan"))
                added = []
            except Exception as exc:  # whatever a replanner returns, it must not kill the loop
                log.exception("replan of task %s could not be applied", self.task_id)
                events.append(Error(message=f"replan rejected: {type(exc).__name__}: {exc}", where="replan"))
                added = []
            self.graph_changed = self.graph_changed or bool(added)
            self.nothing_to_add = done.request.reason == "drained" and not added
            events.append(Replan(reason=done.request.detail, added=added, used=self.used,
                                 max=self.config.max_replan))
        if self.due is not None:
            self.start("failure", self.due)
