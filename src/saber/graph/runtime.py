"""``GraphRuntime``: runs a task graph eagerly, in parallel, with races, retries and checkpoints.

One scheduler loop owns the graph. Workers (one asyncio task per node or race group) execute
and report an outcome on a queue; the loop applies each batch of outcomes, makes the finished
nodes durable, announces them, and only then starts the nodes they unblocked. So the graph is
never mutated from two places, a replan's nodes are added only by the loop, and a node's
checkpoint is written before any dependent starts.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import random
import threading
import time
import uuid
from collections.abc import Coroutine, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from saber.config.graph import GraphConfig
from saber.events import Error, Event, EventHandler, GraphReady, emitting_to
from saber.graph.agents import Replanner, SubAgent
from saber.graph.attempts import ToolEvents
from saber.graph.checkpoint.base import CheckpointStore, TaskClaimedError, TaskStatus, new_owner
from saber.graph.execute import NodeExecutor, Substitute
from saber.graph.lease import LeaseKeeper
from saber.graph.node import Node, NodeStatus
from saber.graph.outcome import NodeOutcome, RaceOutcome
from saber.graph.persist import finish_anyway, run_status, save_graph, save_nodes, set_status
from saber.graph.placeholders import substitute_placeholders
from saber.graph.replanning import ReplanDone, Replanning
from saber.graph.result import RunResult
from saber.graph.state import GraphState, Launch
from saber.graph.streaming import FeedClosed, FeedMessage, FeedNodes, FeedReconcile, NodeFeed
from saber.graph.taskgraph import TaskGraph
from saber.tools.base import Tool

log = logging.getLogger(__name__)

PLAN_INCOMPLETE = "plan_incomplete"
"""Checkpoint meta key, true while the planner still streams the graph (see ``plan_incomplete``)."""


@dataclass(frozen=True, slots=True)
class _Wake:
    """Sent by ``cancel()`` so the loop notices at once."""


_Message = NodeOutcome | RaceOutcome | ReplanDone | _Wake | FeedMessage


class GraphRuntime:
    """``await GraphRuntime(graph, tools, GraphConfig(...), on_event).run()`` → RunResult."""

    def __init__(
        self,
        graph: TaskGraph | Iterable[Node],
        tools: Mapping[str, Tool],
        config: GraphConfig | None = None,
        on_event: EventHandler | None = None,
        *,
        agents: Mapping[str, SubAgent] | None = None,
        checkpoint: CheckpointStore | None = None,
        task_id: str | None = None,
        replanner: Replanner | None = None,
        substitute: Substitute | None = None,
        seed: int | None = None,
        meta: Mapping[str, Any] | None = None,
        answer_follows: bool = False,
    ) -> None:
        self.graph = graph if isinstance(graph, TaskGraph) else TaskGraph(graph)
        self.tools = dict(tools)
        self.config = config or GraphConfig()
        self.on_event = on_event
        self.agents = dict(agents or {})
        self.checkpoint = checkpoint
        self.task_id = task_id or uuid.uuid4().hex
        self.meta = dict(meta or {})
        """Saved with the checkpoint (who asked what), for whoever resumes the task."""
        self.answer_follows = answer_follows
        """The caller writes an answer from the run: a run that ends done or failed is checkpointed
        as "answering" (still listed, resumable) until the caller records the final status with
        ``persist.answered``, so a kill during the answer loses nothing."""
        self._stopped: str | None = None
        """Why the run stopped early on its own (a checkpoint write failed, a scheduler bug)."""
        if substitute is None:
            substitute = substitute_placeholders
        self._state = GraphState(self.graph, self.config)  # raises GraphError on a malformed race group
        self._phase = "new"
        self._cancelled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._queue: asyncio.Queue[_Message] = asyncio.Queue()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._exec = NodeExecutor(
            self, state=self._state, tools=self.tools, agents=self.agents, config=self.config, task_id=self.task_id,
            substitute=substitute, rng=random.Random(seed), emit=self._emit, report=self._queue.put_nowait,
        )
        self._replan = Replanning(
            replanner, graph=self.graph, state=self._state, config=self.config, task_id=self.task_id,
            live=lambda: not self._cancelled and self._phase == "running", spawn=self._spawn,
            report=self._queue.put_nowait, streaming=lambda: self._feed is not None and self._feed.open,
        )
        self._owner = new_owner() if checkpoint is not None else None
        """Who holds the task's lease in the checkpoint store while this runtime runs it."""
        self._lease: LeaseKeeper | None = None
        self._feed: NodeFeed | None = None
        """Open while the planner still streams this graph (``open_feed``)."""

    @property
    def replanner(self) -> Replanner | None:
        return self._replan.replanner

    @replanner.setter
    def replanner(self, replanner: Replanner | None) -> None:
        self._replan.replanner = replanner

    @property
    def replans_used(self) -> int:
        return self._replan.used

    @replans_used.setter
    def replans_used(self, used: int) -> None:
        self._replan.used = used

    # -- public ---------------------------------------------------------------------------------

    @classmethod
    async def restore(
        cls, task_id: str, store: CheckpointStore, tools: Mapping[str, Tool], *,
        config: GraphConfig | None = None, **kwargs: Any,
    ) -> GraphRuntime:
        """A runtime for a checkpointed task: finished nodes keep their results, nodes that were
        running or pending (or cancelled) will run. Raises LookupError for an unknown task, and
        ``TaskClaimedError`` ("task T is running in another process (lease until ...)") while
        another live process runs it: the task is claimed for this runtime first."""
        saved = await store.load(task_id)
        if saved is None:
            raise LookupError(f"no checkpoint for task {task_id!r}")
        owner = new_owner()
        await store.claim(task_id, owner)
        saved = await store.load(task_id) or saved  # as of the claim: the last owner may have saved since
        for node in saved.nodes:
            if node.status in (NodeStatus.PENDING, NodeStatus.RUNNING, NodeStatus.CANCELLED):
                node.status, node.result, node.error, node.attempts, node.duration_ms = NodeStatus.PENDING, None, None, 0, 0.0
        kwargs.setdefault("meta", saved.meta)
        runtime = cls(TaskGraph(saved.nodes), tools, config or GraphConfig.from_dict(saved.config),
                      checkpoint=store, task_id=task_id, **kwargs)
        runtime.replans_used = saved.replans
        runtime._owner = owner
        return runtime

    @classmethod
    async def resume(
        cls, task_id: str, store: CheckpointStore, tools: Mapping[str, Tool], **kwargs: Any
    ) -> RunResult:
        """Continue a task after the process that ran it died (see ``restore``)."""
        return await (await cls.restore(task_id, store, tools, **kwargs)).run()

    def cancel(self) -> None:
        """Stop the run: running nodes are cancelled at once, pending ones never start, and
        ``run()`` returns a result saying what finished. Safe to call from any thread."""
        if self._loop is None or self._phase != "running":
            self._cancelled = True
        elif threading.get_ident() == self._loop_thread:
            self._cancel_now()
        else:
            self._loop.call_soon_threadsafe(self._cancel_now)

    def open_feed(self) -> None:
        """Before ``run()``: more nodes will come while it runs (streamed planning, see
        ``graph/streaming.py``); the run does not end while the feed is open."""
        if self._phase != "new":
            raise RuntimeError("open_feed() must be called before run()")
        self._feed = NodeFeed(self.graph, self._state)
        self._state.races_may_grow = True
        self.meta[PLAN_INCOMPLETE] = True

    @property
    def plan_incomplete(self) -> bool:
        """The checkpoint this runtime was restored from was saved while the planner was still
        writing the plan (the process died or the run was cancelled mid-stream): the nodes it holds
        may be only the start of the plan."""
        return bool(self.meta.get(PLAN_INCOMPLETE))

    def add_nodes(self, nodes: Iterable[Node]) -> None:
        """Hand the running graph nodes the planner has just written (after ``open_feed``)."""
        self._feed_message(FeedNodes(nodes=list(nodes)))

    def reconcile(self, changed: Mapping[str, Node], dropped: Iterable[str]) -> None:
        """The final plan changed or dropped nodes already handed over."""
        self._feed_message(FeedReconcile(changed=dict(changed), dropped=list(dropped)))

    def close_feed(self) -> None:
        """The plan is complete: once what it holds has run, the run ends."""
        self._feed_message(FeedClosed())

    def _feed_message(self, message: FeedMessage) -> None:
        if self._feed is None:
            raise RuntimeError("call open_feed() before run() to hand a graph nodes while it runs")
        self._queue.put_nowait(message)

    async def run(self) -> RunResult:
        if self._phase != "new":
            raise RuntimeError("a GraphRuntime runs once; use GraphRuntime.restore() to continue a task")
        self._phase = "running"
        self._loop, self._loop_thread = asyncio.get_running_loop(), threading.get_ident()
        started = time.perf_counter()
        await self._emit(GraphReady(nodes=[n.to_dict() for n in self.graph], levels=self.graph.levels()))
        try:
            await self._save_graph()  # a failure stops the run before any node starts
        except asyncio.CancelledError:  # cancelled before the first node: the task is not left "running"
            self._phase = "finished"
            await self._set_status("cancelled")
            raise
        if self.checkpoint is not None and self._owner is not None:
            self._lease = LeaseKeeper(self.checkpoint, self.task_id, self._owner, self._lease_lost)
            self._lease.start()
        try:
            if self.on_event is not None:
                self._exec.tool_events = ToolEvents(self, self.on_event, running=lambda: self._phase == "running",
                                                    spawn=self._spawn)
            with emitting_to(self._exec.tool_events):
                await self._schedule()
        except asyncio.CancelledError:  # the caller cancelled us: leave a clean, saved state behind
            self._phase = "finished"
            self._cancelled = True
            await finish_anyway(self._end_cancelled())
            raise
        except Exception as exc:  # a bug in the scheduler: end the run cleanly, no worker left running
            log.exception("task %s: the scheduler failed", self.task_id)
            self._cancelled = True
            self._stopped = f"internal error in the scheduler: {exc!r}"
            await self._emit(Error(message=f"{self._stopped}; the run stopped", where="runtime"))
        except BaseException:
            self._phase = "finished"
            await self._stop_lease()  # no heartbeat left behind
            raise
        self._phase = "finished"
        # A cancel of the caller's task that lands while the run winds up (say, after cancel()
        # while the cancelled nodes are saved) must not leave the task saying "running".
        result: RunResult = await finish_anyway(self._wind_up(started))
        return result

    async def _wind_up(self, started: float) -> RunResult:
        await self._stop_lease()
        if self._cancelled:
            await self._shutdown()
        status = run_status(self.graph, self._state, cancelled=self._cancelled)
        await self._set_status("answering" if self.answer_follows and status != "cancelled" else status)
        return RunResult(stopped=self._stopped,
            task_id=self.task_id, status=status, nodes=self.graph.nodes, finished=list(self._state.finished_order),
            unfinished=[n.id for n in self.graph if n.status is NodeStatus.CANCELLED],
            replans=self.replans_used, duration_ms=(time.perf_counter() - started) * 1000.0,
        )

    # -- the scheduler loop -----------------------------------------------------------------------

    async def _schedule(self) -> None:
        changed: list[Node] = []
        events: list[Event] = []
        launch = self._state.settle(changed, events)
        await self._commit(changed, events, launch)
        while not self._cancelled:
            drained = not self._state.running and self._replan.task is None and not (self._feed and self._feed.open)
            if drained and (self._replan.nothing_to_add or not self._replan.start("drained", "all nodes finished")):
                await self._fail_stranded()
                return
            batch = [await self._queue.get()]
            while not self._queue.empty():
                batch.append(self._queue.get_nowait())
            if self._cancelled:
                self._requeue(batch)
                return
            changed, events = [], []
            for message in batch:
                self._apply_safely(message, changed, events)
            launch = self._state.settle(changed, events)
            await self._commit(changed, events, launch)

    async def _fail_stranded(self) -> None:
        """Nothing runs and nothing will: a node still pending now is a scheduler bug. Fail it
        loudly rather than let the run look finished."""
        changed: list[Node] = []
        events: list[Event] = []
        stranded = self._state.fail_stranded("internal error: never started (the run drained while it was pending)",
                                             changed, events)
        if stranded:
            log.error("task %s drained with nodes never started: %s", self.task_id, ", ".join(stranded))
            events.insert(0, Error(message=f"internal error: the run drained with {', '.join(stranded)} never started",
                                   where="runtime"))
            await self._commit(changed, events, [])

    def _apply_safely(self, message: _Message, changed: list[Node], events: list[Event]) -> None:
        """Apply one outcome; if that raises (a bug), fail only the nodes it was about."""
        try:
            self._apply(message, changed, events)
        except Exception as exc:
            log.exception("task %s: applying %s failed", self.task_id, type(message).__name__)
            outcomes = [message] if isinstance(message, NodeOutcome) else \
                message.outcomes if isinstance(message, RaceOutcome) else []
            for outcome in outcomes:
                node = self.graph.nodes.get(outcome.node_id)
                if node is None or node.status.finished:
                    continue
                self._state.finish(NodeOutcome(node_id=outcome.node_id, status=NodeStatus.FAILED,
                                               error=f"internal error: {exc!r}"), changed, events)

    def _apply(self, message: _Message, changed: list[Node], events: list[Event]) -> None:
        if isinstance(message, NodeOutcome):
            failed = self._state.finish(message, changed, events)
        elif isinstance(message, RaceOutcome):
            failed = self._state.finish_race(message, changed, events)
        elif isinstance(message, ReplanDone):
            failed = []
            self._replan.apply(message, events)
        elif isinstance(message, FeedNodes | FeedReconcile | FeedClosed) and self._feed is not None:
            failed = []
            if self._feed.apply(message, changed, events):
                self._replan.graph_changed = True
            if isinstance(message, FeedClosed) and self.meta.pop(PLAN_INCOMPLETE, None):
                self._replan.graph_changed = True  # saved again: the checkpoint now holds the whole plan
            if isinstance(message, FeedClosed):
                self._replan.plan_complete()
        else:
            return
        if failed:
            self._replan.after_failure(failed)

    async def _commit(self, changed: list[Node], events: list[Event], launch: list[Launch]) -> None:
        """Make the batch durable, announce it, then start what it unblocked (in that order)."""
        if self._replan.graph_changed:
            self._replan.graph_changed = False
            await self._save_graph()
        elif changed and self.checkpoint is not None:
            error = await save_nodes(self.checkpoint, self.task_id, changed, replans=self.replans_used,
                                     owner=self._owner, lost=self._lost_lease)
            if error is not None:
                events.append(error)
                self._checkpoint_failed()
        for event in events:
            await self._emit(event)
        if self._cancelled:  # e.g. the lease was lost while saving: start nothing more
            return
        for start in launch:
            if start.race is None:
                self._spawn(self._exec.node_worker(start.nodes[0]), f"saber-node-{start.nodes[0].id}")
            else:
                race = self._exec.race(start.race, start.nodes)
                self._state.race_started(start.race, race)
                self._spawn(self._exec.race_worker(race), f"saber-race-{start.race}")

    def _requeue(self, batch: list[_Message]) -> None:
        for message in batch:
            self._queue.put_nowait(message)

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- cancellation -----------------------------------------------------------------------------

    def _cancel_now(self) -> None:
        self._cancelled = True
        for task in list(self._tasks):
            task.cancel()
        self._queue.put_nowait(_Wake())

    def _checkpoint_failed(self) -> None:
        """A checkpoint could not be written: a crash now would lose work, so stop. What ran is kept
        in memory; the task stays resumable (its last saved state, then ``cancelled``)."""
        if self._stopped is None:
            self._stopped = "a checkpoint write failed"
        if self._phase == "running" and not self._cancelled:
            log.error("task %s: a checkpoint write failed; stopping the run (it can be resumed)", self.task_id)
            self._cancel_now()

    async def _shutdown(self) -> None:
        """After a cancel: stop every worker, keep what finished, mark the rest cancelled, save."""
        while self._tasks:  # a worker's last act may start another (a tool event): until none is left
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._tasks.difference_update(tasks)
        try:
            await self._save_rest()
        except Exception:  # a bug while saving what is left: the workers are stopped all the same
            log.exception("task %s: saving the cancelled nodes failed", self.task_id)

    async def _save_rest(self) -> None:
        changed: list[Node] = []
        events: list[Event] = []
        while not self._queue.empty():
            message = self._queue.get_nowait()
            if isinstance(message, NodeOutcome | RaceOutcome):
                self._apply(message, changed, events)
        self._state.cancel_rest(changed, events)
        await self._commit(changed, events, [])

    # -- events and storage -----------------------------------------------------------------------

    async def _emit(self, event: Event) -> None:
        if self.on_event is None:
            return
        try:
            result = self.on_event(event)
            if result is not None and inspect.isawaitable(result):
                await result
        except Exception:  # a broken listener must not break the run
            log.exception("event handler failed on %s", event.type)

    def _lost_lease(self, exc: TaskClaimedError) -> None:
        """Another process resumed the task (this one stalled past its lease): stop, so no node
        runs twice at once; writes made with our owner id are refused from now on."""
        log.error("%s; stopping this run", exc)
        if self._phase == "running":
            self.cancel()

    async def _stop_lease(self) -> None:
        if self._lease is not None:
            await self._lease.stop()

    async def _lease_lost(self, exc: TaskClaimedError) -> None:
        self._lost_lease(exc)
        await self._emit(Error(message=str(exc), where="checkpoint"))

    async def _save_graph(self) -> None:
        if self.checkpoint is not None:
            saved = await save_graph(self.checkpoint, self.task_id, list(self.graph), config=self.config.to_dict(),
                                     replans=self.replans_used, meta=self.meta, owner=self._owner, emit=self._emit,
                                     lost=self._lost_lease)
            if not saved:
                self._checkpoint_failed()

    async def _end_cancelled(self) -> None:
        await self._shutdown()
        await self._stop_lease()
        await self._set_status("cancelled")

    async def _set_status(self, status: TaskStatus) -> None:
        """Record how the run ended, even when the caller cancels meanwhile (the write runs in a
        worker thread: a cancel must not leave the task saying "running")."""
        if self.checkpoint is not None:
            await finish_anyway(set_status(self.checkpoint, self.task_id, status, owner=self._owner, emit=self._emit))

