"""Requests the server runs: each is an asyncio task that writes the agent's events into its log.

A run is independent of the HTTP connection that started it: the connection only reads the
log. So a stream that drops can be picked up again (``/api/tasks/{id}/events``), a detached
request keeps running, and a cancel reaches the task by id, from any connection of its user.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from starlette.types import Message

from saber.agent import Agent
from saber.events import Done, Event
from saber.observability.metrics import RunObserver
from saber.observability.tracing import LocalRunTrace
from saber.runs.errors import ApiError
from saber.runs.eventlog import EventLog

log = logging.getLogger(__name__)

EventSource = Callable[[], AsyncIterator[Event]]

TaskStatus = Literal["queued", "running", "recovering", "done", "cancelled", "failed"]
"""A run's status: queued (distributed mode: no worker has taken it yet), running, recovering
(distributed mode: its worker is gone, another takes it over), done, cancelled, failed (distributed
mode: the run could not run, say a malformed queued request; ``TaskRun.error`` says why)."""


@dataclass(kw_only=True)
class TaskRun:
    task_id: str
    user_id: str
    kind: str
    """chat | resume"""
    query: str
    detached: bool = False
    started: float = field(default_factory=time.time)
    log: EventLog = field(default_factory=EventLog)
    pump: asyncio.Task[None] | None = None
    observer: RunObserver = field(default_factory=RunObserver)
    record: TaskStatus | None = None
    """The distributed mode: the status of the run's record in the run queue, as last read. It
    decides while the run is not finished (queued, running, recovering) and when it failed."""
    error: str | None = None
    """Why the run failed (``record`` failed)."""

    @property
    def queued(self) -> bool:
        return self.record == "queued"

    @property
    def finished(self) -> bool:
        return self.log.closed

    @property
    def status(self) -> TaskStatus:
        if self.record == "failed":
            return "failed"
        if not self.finished:  # the record decides (also for a run settled whose events Redis lost)
            return self.record if self.record is not None else "running"
        done = self.log.last("done")
        return "cancelled" if done is not None and done.data.get("interrupted") else "done"

    def summary(self) -> dict[str, object]:
        done = self.log.last("done")
        return {"task_id": self.task_id, "status": self.status, "user_id": self.user_id, "query": self.query,
                "kind": self.kind, "started": self.started, "events": len(self.log.events),
                "mode": done.data.get("mode") if done else None, "error": self.error}


class RunManager:
    def __init__(self, agent: Agent, *, max_running_per_user: int, keep_finished: int) -> None:
        self.agent = agent
        self.max_running_per_user = max_running_per_user
        self.keep_finished = keep_finished
        self.closing = False
        self._runs: OrderedDict[str, TaskRun] = OrderedDict()
        self._cancelling: set[asyncio.Task[bool]] = set()

    def running(self, user_id: str | None = None) -> list[TaskRun]:
        """Runs not finished (including ones still starting), of one user or all."""
        return [r for r in self._runs.values() if not r.finished and (user_id is None or r.user_id == user_id)]

    def get(self, task_id: str, user_id: str) -> TaskRun | None:
        """The run, if it is this user's; another user's task is as absent as an unknown one."""
        run = self._runs.get(task_id)
        return run if run is not None and run.user_id == user_id else None

    def runs_of(self, user_id: str) -> list[TaskRun]:
        return [r for r in self._runs.values() if r.user_id == user_id]

    def admit(self, user_id: str) -> None:
        """Raise the 503/429 a new request gets while shutting down or when its user is at the limit."""
        if self.closing:
            raise ApiError(503, "shutting_down", "the server is shutting down; retry on another instance or later",
                           headers={"Retry-After": "5"})
        if len(self.running(user_id)) >= self.max_running_per_user:
            raise ApiError(429, "too_many_requests",
                           f"user {user_id!r} already has {self.max_running_per_user} running request(s): "
                           "wait for one to finish (or cancel it)", headers={"Retry-After": "1"})

    async def find(self, task_id: str, user_id: str) -> TaskRun | None:
        """``get``; the distributed mode's manager also finds tasks other nodes accepted."""
        return self.get(task_id, user_id)

    async def records(self, task_ids: list[str]) -> dict[str, str]:
        """The status of each of ``task_ids`` whose run this manager knows: what the API reports
        for a task before its checkpoint (the distributed mode's manager reads the run queue)."""
        wanted = set(task_ids)
        return {r.task_id: r.status for r in self._runs.values() if r.task_id in wanted}

    async def refresh(self, runs: list[TaskRun]) -> None:
        """Bring what ``runs`` know of their tasks up to date: nothing to do for runs in this process;
        the distributed mode's manager reads their events and queue rows."""

    async def start(self, run: TaskRun, source: EventSource, *, spec: Mapping[str, Any] | None = None) -> TaskRun:
        """Start ``source`` (an agent stream) as ``run``. The stream's first step runs here, so input
        the agent rejects (a task id in use, a task that cannot be resumed) raises ``ValueError``
        before anything is streamed. ``spec``: the request as data, for a manager that queues it."""
        self.admit(run.user_id)
        previous = self._runs.get(run.task_id)
        if previous is not None and not previous.finished:
            raise ApiError(409, "conflict", f"task {run.task_id!r} is already running")
        if previous is not None and run.kind != "resume":
            raise ApiError(409, "conflict", f"task id {run.task_id!r} already exists: choose a new one")
        self._runs[run.task_id] = run  # counted against the user's limit from now on
        self._runs.move_to_end(run.task_id)
        trace = LocalRunTrace(run.task_id, run.kind)
        try:
            with trace.current():
                stream = source()
                first = await anext(aiter(stream))
                await self._record(run, trace, first)  # before the pump starts: the log keeps the order
                run.pump = asyncio.create_task(self._pump(run, stream, trace), name=f"saber-server-run-{run.task_id}")
        except BaseException:
            trace.end()
            if previous is not None:
                self._runs[run.task_id] = previous
            else:
                del self._runs[run.task_id]
            raise
        return run

    @staticmethod
    async def _record(run: TaskRun, trace: LocalRunTrace, event: Event) -> None:
        """Log an event; the log, the metrics and the trace all see it with its secrets redacted."""
        logged = await run.log.add(event.type, event.data)
        run.observer.observe(event.type, logged.data)
        trace.observe(event.type, logged.data)

    async def _pump(self, run: TaskRun, stream: AsyncIterator[Event], trace: LocalRunTrace) -> None:
        try:
            async with contextlib.aclosing(stream):  # type: ignore[type-var]
                async for event in stream:
                    await self._record(run, trace, event)
        except asyncio.CancelledError:
            pass
        except Exception as exc:  # the agent turns failures into events; this is a bug, still end the stream
            log.exception("task %s failed", run.task_id)
            run.log.append("error", {"message": f"{type(exc).__name__}: {exc}", "where": "server"})
        finally:
            if run.log.last("done") is None:
                run.log.append("done", Done(answer="", mode="chat", task_id=run.task_id, interrupted=True).data)
            trace.end()
            run.log.close()
            self._forget_old()

    async def cancel(self, run: TaskRun) -> bool:
        """Cancel a running task; ``done`` (interrupted) ends its log. False when it had finished."""
        if run.finished:
            return False
        if not self.agent.cancel(run.task_id, user_id=run.user_id) and run.pump is not None:
            run.pump.cancel()
        return True

    def cancel_soon(self, run: TaskRun) -> asyncio.Task[bool]:
        """``cancel`` as a task of its own, kept until it ends: for a caller that is being cancelled
        itself (a stream's clean-up after its client hung up), where ``await self.cancel(run)``
        would be cut short at its first await, before the signal went out."""
        task = asyncio.create_task(self.cancel(run), name=f"saber-cancel-{run.task_id}")
        self._cancelling.add(task)
        task.add_done_callback(self._cancel_ended)
        return task

    def _cancel_ended(self, task: asyncio.Task[bool]) -> None:
        self._cancelling.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("cancelling %s failed", task.get_name(), exc_info=task.exception())

    async def wait(self, run: TaskRun) -> None:
        if run.pump is not None:
            await asyncio.gather(asyncio.shield(run.pump), return_exceptions=True)

    async def wait_or_cancel(self, run: TaskRun, receive: Callable[[], Awaitable[Message]]) -> None:
        """Wait for ``run`` to finish; if the client hangs up first (``receive`` gives
        ``http.disconnect``), cancel it: nobody is left to read the answer."""

        async def hung_up() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        watcher = asyncio.ensure_future(hung_up())
        finished = asyncio.ensure_future(self.wait(run))
        try:
            await asyncio.wait([watcher, finished], return_when=asyncio.FIRST_COMPLETED)
            if not finished.done():
                await self.cancel(run)
                await finished
        finally:
            watcher.cancel()
            finished.cancel()
            await asyncio.gather(watcher, finished, return_exceptions=True)

    async def shutdown(self, grace: float) -> None:
        """Refuse new requests, give running ones ``grace`` seconds, then cancel the rest (their
        react checkpoints say cancelled: resumable) and wait for their logs to end with ``done``."""
        self.closing = True
        pumps = [r.pump for r in self.running() if r.pump is not None]
        if not pumps:
            return
        _, pending = await asyncio.wait(pumps, timeout=grace)
        if pending:
            log.warning("cancelling %d request(s) still running after the %s s grace period", len(pending), grace)
            for run in self.running():
                await self.cancel(run)
            await asyncio.wait(pending, timeout=10)

    def _forget_old(self) -> None:
        finished = [tid for tid, r in self._runs.items() if r.finished]
        for task_id in finished[: max(0, len(finished) - self.keep_finished)]:
            del self._runs[task_id]
