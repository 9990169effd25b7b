"""``GraphRuntime``: runs a task graph eagerly, in parallel, with races, retries and checkpoints.

One scheduler loop owns the graph. Workers (one asyncio task per node or race group) execute
and report an outcome on a queue; the loop applies each batch of outcomes, makes the finished
nodes durable, announces them, and only then starts the nodes they unblocked. So the graph is
never mutated from two places, a replan's nodes are added only by the loop, and a node's
checkpoint is written before any dependent starts.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import logging
import random
import threading
import time
import uuid
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from saber.events import (
    Error,
    Event,
    EventHandler,
    GraphReady,
    NodeStart,
    Replan,
    Step,
    emitting_to,
)
from saber.graph.agents import Replanner, ReplanRequest, SubAgent, SubAgentTask
from saber.graph.attempts import Attempt, ToolEvents
from saber.graph.checkpoint.base import CheckpointStore, TaskClaimedError, new_owner
from saber.graph.config import GraphConfig
from saber.graph.lease import LeaseKeeper
from saber.graph.node import Node, NodeStatus
from saber.graph.outcome import NodeOutcome, RaceOutcome
from saber.graph.races import run_race
from saber.graph.result import RunResult, RunStatus
from saber.graph.retry import Failure, backoff_seconds, classify
from saber.graph.state import GraphState
from saber.graph.taskgraph import GraphError, TaskGraph
from saber.tools.base import Tool, call_in_thread
from saber.tools.errors import ToolError, UnknownToolError

log = logging.getLogger(__name__)

Substitute = Callable[[Mapping[str, Any], Mapping[str, Any]], Any]
"""``(params, results by dependency id) -> params with placeholders replaced``; the default is
``saber.planner.placeholders.substitute_placeholders`` (``$n1``, ``${n1.city}``, ``{{n1}}``, ``$1``)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class _ReplanDone:
    request: ReplanRequest
    nodes: list[Node]
    error: str | None = None


@dataclass(frozen=True, slots=True)
class _Wake:
    """Sent by ``cancel()`` so the loop notices at once."""


_Message = NodeOutcome | RaceOutcome | _ReplanDone | _Wake


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
    ) -> None:
        self.graph = graph if isinstance(graph, TaskGraph) else TaskGraph(graph)
        self.tools = dict(tools)
        self.config = config or GraphConfig()
        self.on_event = on_event
        self.agents = dict(agents or {})
        self.checkpoint = checkpoint
        self.task_id = task_id or uuid.uuid4().hex
        self.replanner = replanner
        self.replans_used = 0
        self.meta = dict(meta or {})
        """Saved with the checkpoint (who asked what), for whoever resumes the task."""
        if substitute is None:  # imported here: the planner package imports the graph package
            from saber.planner.placeholders import substitute_placeholders

            substitute = substitute_placeholders
        self._substitute: Substitute = substitute
        self._rng = random.Random(seed)
        self._state = GraphState(self.graph, self.config)  # raises GraphError on a malformed race group
        self._phase = "new"
        self._cancelled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._queue: asyncio.Queue[_Message] = asyncio.Queue()
        self._sem = asyncio.Semaphore(self.config.max_parallel)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._replan_task: asyncio.Task[None] | None = None
        self._replan_due: str | None = None
        self._graph_changed = False
        self._nothing_to_add = False
        """The replanner, asked after the graph drained, added nothing: the run is over."""
        self._tool_events: ToolEvents | None = None
        """What tools emit through (None without on_event); tracks the attempts under way."""
        self._owner = new_owner() if checkpoint is not None else None
        """Who holds the task's lease in the checkpoint store while this runtime runs it."""
        self._lease: LeaseKeeper | None = None

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

    async def run(self) -> RunResult:
        if self._phase != "new":
            raise RuntimeError("a GraphRuntime runs once; use GraphRuntime.restore() to continue a task")
        self._phase = "running"
        self._loop, self._loop_thread = asyncio.get_running_loop(), threading.get_ident()
        started = time.perf_counter()
        await self._emit(GraphReady(nodes=[n.to_dict() for n in self.graph], levels=self.graph.levels()))
        await self._save_graph()
        if self.checkpoint is not None and self._owner is not None:
            self._lease = LeaseKeeper(self.checkpoint, self.task_id, self._owner, self._lease_lost)
            self._lease.start()
        try:
            if self.on_event is not None:
                self._tool_events = ToolEvents(self, self.on_event, running=lambda: self._phase == "running",
                                               spawn=self._spawn)
            with emitting_to(self._tool_events):
                await self._schedule()
        except asyncio.CancelledError:  # the caller cancelled us: leave a clean, saved state behind
            self._cancelled = True
            await self._shutdown()
            await self._stop_lease()
            await self._set_status("cancelled")
            raise
        finally:
            self._phase = "finished"
            await self._stop_lease()  # also when a bug escapes the loop: no heartbeat left behind
        if self._cancelled:
            await self._shutdown()
        status = self._run_status()
        await self._set_status(status)
        return RunResult(
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
            drained = not self._state.running and self._replan_task is None
            if drained and (self._nothing_to_add or not self._start_replan("drained", "all nodes finished")):
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
                self._apply(message, changed, events)
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

    def _apply(self, message: _Message, changed: list[Node], events: list[Event]) -> None:
        if isinstance(message, NodeOutcome):
            failed = self._state.finish(message, changed, events)
        elif isinstance(message, RaceOutcome):
            failed = self._state.finish_race(message, changed, events)
        elif isinstance(message, _ReplanDone):
            failed = []
            self._apply_replan(message, events)
        else:
            return
        if failed:
            detail = "; ".join(f"{n.id} failed: {n.error}" for n in failed)
            if not self._start_replan("failure", detail):
                self._replan_due = detail

    async def _commit(self, changed: list[Node], events: list[Event], launch: list[list[Node]]) -> None:
        """Make the batch durable, announce it, then start what it unblocked (in that order)."""
        if self._graph_changed:
            self._graph_changed = False
            await self._save_graph()
        elif changed and self.checkpoint is not None:
            try:
                await self.checkpoint.save_nodes(self.task_id, changed, replans=self.replans_used, owner=self._owner)
            except TaskClaimedError as exc:
                self._lost_lease(exc)
                events.append(Error(message=str(exc), where="checkpoint"))
            except Exception as exc:
                log.exception("checkpoint of task %s failed", self.task_id)
                events.append(Error(message=f"checkpoint failed: {exc}", where="checkpoint"))
        for event in events:
            await self._emit(event)
        if self._cancelled:  # e.g. the lease was lost while saving: start nothing more
            return
        for group in launch:
            if len(group) == 1:
                self._spawn(self._node_worker(group[0]), f"saber-node-{group[0].id}")
            else:
                name = group[0].race_group or ""
                self._spawn(self._race_worker(name, group), f"saber-race-{name}")

    def _requeue(self, batch: list[_Message]) -> None:
        for message in batch:
            self._queue.put_nowait(message)

    # -- workers ----------------------------------------------------------------------------------

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _node_worker(self, node: Node) -> None:
        try:
            outcome = await self._run_node(node)
        except Exception as exc:  # a bug in the runtime itself: fail the node, keep the run alive
            log.exception("node %s crashed the runtime worker", node.id)
            outcome = NodeOutcome(node_id=node.id, status=NodeStatus.FAILED, error=f"internal error: {exc!r}")
        self._queue.put_nowait(outcome)

    async def _race_worker(self, group: str, members: list[Node]) -> None:
        try:
            await run_race(group, members, self._run_node, self.config, self._queue.put_nowait)
        except Exception as exc:
            log.exception("race group %s crashed the runtime worker", group)
            self._queue.put_nowait(RaceOutcome(group=group, winner=None, outcomes=[
                NodeOutcome(node_id=m.id, status=NodeStatus.FAILED, error=f"internal error: {exc!r}") for m in members
            ]))

    async def _run_node(self, node: Node) -> NodeOutcome:
        """All attempts of one node: retryable failures are retried with backoff and jitter."""
        started = time.perf_counter()
        attempts = self.config.attempts
        for attempt in range(1, attempts + 1):
            node.attempts = attempt
            timeout_ms = self.config.sub_agent_timeout_ms if node.type == "sub_agent" else self.config.step_timeout_ms
            async with self._sem:
                await self._emit(NodeStart(id=node.id, tool=node.target, attempt=attempt))
                current = Attempt(run=self, node_id=node.id, number=attempt)
                try:
                    async with asyncio.timeout(timeout_ms / 1000.0 if timeout_ms else None):
                        result = await self._attempt(node, current)
                except Exception as exc:
                    failure = classify(exc, timeout_ms=timeout_ms)
                    if failure.retryable and attempt < attempts and current.abandoned_thread():
                        failure = Failure(retryable=False, message=f"{failure.message}; the tool is still running "
                                          "in its thread, so it is not retried (a retry would run it twice at once)")
                else:
                    return NodeOutcome(node_id=node.id, status=NodeStatus.DONE, result=result,
                                       duration_ms=(time.perf_counter() - started) * 1000.0)
            if not failure.retryable or attempt == attempts:
                return NodeOutcome(node_id=node.id, status=NodeStatus.FAILED, error=failure.message,
                                   duration_ms=(time.perf_counter() - started) * 1000.0)
            delay = backoff_seconds(attempt, self.config, self._rng)
            await self._emit(Step(kind="thought", node_id=node.id, tool=node.target,
                                  content=f"{node.id} attempt {attempt} failed: {failure.message}; "
                                          f"retrying in {delay * 1000:.0f} ms"))
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _attempt(self, node: Node, current: Attempt) -> Any:
        events = self._tool_events
        if events is None:
            return await self._call(node, current)
        token = events.enter(current)
        try:
            return await self._call(node, current)
        finally:
            events.leave(current, token)

    async def _call(self, node: Node, current: Attempt) -> Any:
        inputs = self._state.inputs(node) if node.depends_on else {}
        # placeholders can only name dependencies: without any, there is nothing to substitute
        params = self._substitute(node.params, {dep: value for (dep, _), value in inputs.items()}) if inputs else node.params
        if node.type == "sub_agent":
            agent = self.agents.get(node.agent or "")
            if agent is None:
                known = ", ".join(sorted(self.agents)) or "none"
                raise ToolError(f"unknown agent: {node.agent} (known: {known})", retryable=False)
            await self._emit(Step(kind="action", content=node.goal or f"{node.agent}", tool=node.agent,
                                  params=params, node_id=node.id))
            task = SubAgentTask(goal=node.goal, params=params, node_id=node.id, agent=node.agent or "",
                                task_id=self.task_id, attempt=current.number,
                                upstream={f"{dep}:{target}": value for (dep, target), value in inputs.items()})
            return await agent.run(task)
        tool = self.tools.get(node.tool or "")
        if tool is None:
            raise UnknownToolError(node.tool or "", known=list(self.tools))
        args = tool.validate(params)
        await self._emit(Step(kind="action", content=f"{tool.name}", tool=tool.name, params=args, node_id=node.id))
        if not tool.is_sync:
            return await tool.run(args, validate=False)
        # A thread of its own (not the loop's shared executor): one stuck past its timeout keeps
        # only that thread, and the attempt can tell it is still running (see _run_node).
        current.call = call_in_thread(tool.execute, args)
        result = await current.call.future
        return await result if inspect.isawaitable(result) else result

    # -- replanning -------------------------------------------------------------------------------

    def _start_replan(self, reason: str, detail: str) -> bool:
        if self.replanner is None or self._replan_task is not None or self.replans_used >= self.config.max_replan:
            return False
        if self._cancelled or self._phase != "running":  # nobody would await it: no model call for a stopped task
            return False
        self.replans_used += 1
        self._replan_due = None
        request = ReplanRequest(
            reason="failure" if reason == "failure" else "drained", detail=detail,
            nodes=[copy.deepcopy(n) for n in self.graph],
            failed=[n.id for n in self.graph if n.status is NodeStatus.FAILED],
            used=self.replans_used - 1, max=self.config.max_replan,
        )
        self._replan_task = self._spawn(self._replan_worker(request), "saber-replan")
        return True

    async def _replan_worker(self, request: ReplanRequest) -> None:
        assert self.replanner is not None
        try:
            nodes = list(await self.replanner(request))
        except Exception as exc:
            log.exception("replanner failed")
            self._queue.put_nowait(_ReplanDone(request=request, nodes=[], error=f"{type(exc).__name__}: {exc}"))
        else:
            self._queue.put_nowait(_ReplanDone(request=request, nodes=nodes))

    def _apply_replan(self, done: _ReplanDone, events: list[Event]) -> None:
        self._replan_task = None
        if done.error is not None:
            events.append(Error(message=f"replanning failed: {done.error}", where="replan"))
        else:
            try:
                added = self._state.add(done.nodes)
            except GraphError as exc:
                events.append(Error(message=f"replan rejected: {exc}", where="replan"))
                added = []
            except Exception as exc:  # whatever a replanner returns, it must not kill the loop
                log.exception("replan of task %s could not be applied", self.task_id)
                events.append(Error(message=f"replan rejected: {type(exc).__name__}: {exc}", where="replan"))
                added = []
            self._graph_changed = self._graph_changed or bool(added)
            self._nothing_to_add = done.request.reason == "drained" and not added
            events.append(Replan(reason=done.request.detail, added=added, used=self.replans_used,
                                 max=self.config.max_replan))
        if self._replan_due is not None:
            self._start_replan("failure", self._replan_due)

    # -- cancellation -----------------------------------------------------------------------------

    def _cancel_now(self) -> None:
        self._cancelled = True
        for task in list(self._tasks):
            task.cancel()
        self._queue.put_nowait(_Wake())

    async def _shutdown(self) -> None:
        """After a cancel: stop every worker, keep what finished, mark the rest cancelled, save."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
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
        if self.checkpoint is None:
            return
        try:
            await self.checkpoint.save_graph(self.task_id, list(self.graph), config=self.config.to_dict(),
                                             status="running", replans=self.replans_used, meta=self.meta,
                                             owner=self._owner)
        except Exception as exc:
            log.exception("checkpoint of task %s failed", self.task_id)
            await self._emit(Error(message=f"checkpoint failed: {exc}", where="checkpoint"))

    async def _set_status(self, status: RunStatus) -> None:
        if self.checkpoint is None:
            return
        try:
            await self.checkpoint.set_status(self.task_id, status, owner=self._owner)
        except TaskClaimedError as exc:
            log.error("%s; its status is left to the new owner", exc)
            await self._emit(Error(message=str(exc), where="checkpoint"))
        except Exception as exc:
            log.exception("checkpoint of task %s failed", self.task_id)
            await self._emit(Error(message=f"checkpoint failed: {exc}", where="checkpoint"))

    def _run_status(self) -> RunStatus:
        if self._cancelled:
            return "cancelled"
        unfinished = (NodeStatus.FAILED, NodeStatus.PENDING, NodeStatus.RUNNING)  # the last two: never "done"
        if any(n.status in unfinished or self._state.failure_skipped(n) for n in self.graph):
            return "failed"
        return "done"

