"""The one run manager: it admits requests, keeps the runs this node knows, and finds, cancels and
waits for them; where a run executes and where its events come from is its ``RunBackend``.

* ``saber.runs.local.LocalRuns``: an asyncio task of this process writes the agent's events into
  an in-memory ``EventLog`` (the default server).
* ``saber.cluster.api.QueuedRuns``: a row of the run queue that a worker takes, and the task's
  Redis stream (the distributed mode).

A run is independent of the HTTP connection that started it: the connection only reads the
log. So a stream that drops can be picked up again (``/api/tasks/{id}/events``), a detached
request keeps running, and a cancel reaches the task by id, from any connection of its user.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from starlette.types import Message

from saber.observability.metrics import RunObserver
from saber.runs.errors import ApiError
from saber.runs.eventlog import EventLog
from saber.runs.request import RunRequest
from saber.runs.status import LIVE, Ended, TaskStatus, run_status

log = logging.getLogger(__name__)


@dataclass(kw_only=True)
class TaskRun:
    """One run of a task, as this node knows it: what was asked, its event log, its record."""

    task_id: str
    user_id: str
    kind: str
    """chat | openai | resume"""
    query: str
    """The query as shown (redacted)."""
    request: RunRequest = field(default_factory=RunRequest)
    """What the run runs, as the route validated it (a resume's is empty: the checkpoint has it)."""
    detached: bool = False
    started: float = field(default_factory=time.time)
    log: EventLog = field(default_factory=EventLog)
    """Its events: in memory (``LocalRuns``), or read from the task's Redis stream (``QueuedRuns``)."""
    pump: asyncio.Task[None] | None = None
    """``LocalRuns``: the task that writes the agent's events into the log."""
    observer: RunObserver = field(default_factory=RunObserver)
    record: TaskStatus | None = None
    """The status of the run's stored record (the distributed mode's run queue), as last read; None
    for a run of this process, whose log is its only record. The record, when there is one, is the
    run's status (``saber.runs.status.run_status``)."""
    error: str | None = None
    """Why the run failed (``record`` failed)."""

    @property
    def finished(self) -> bool:
        return self.log.closed

    @property
    def ended(self) -> Ended | None:
        """How its log ended (None while it is open): cancelled when its ``done`` says interrupted."""
        if not self.log.closed:
            return None
        done = self.log.last("done")
        return "cancelled" if done is not None and done.data.get("interrupted") else "done"

    @property
    def status(self) -> TaskStatus:
        return run_status(self.record, self.ended)

    def summary(self) -> dict[str, object]:
        done = self.log.last("done")
        return {"task_id": self.task_id, "status": self.status, "user_id": self.user_id, "query": self.query,
                "kind": self.kind, "started": self.started, "events": len(self.log.events),
                "mode": done.data.get("mode") if done else None, "error": self.error}


class RunBackend(Protocol):
    """Where runs execute and where their events come from: what differs between one process and
    the distributed mode. The ``RunManager`` that holds it does the rest."""

    kept_elsewhere: bool
    """Runs outlive this node's memory of them (a queue and an event store keep them): the manager
    may forget any run it knows, not only finished ones."""

    async def launch(self, run: TaskRun) -> None:
        """Start ``run`` from ``run.request``; from then on ``run.log`` has its events. Input the
        agent refuses (a task id in use, a task that cannot be resumed) raises ``ValueError`` or
        ``ApiError`` here, before anything is streamed."""

    async def cancel(self, run: TaskRun) -> bool:
        """Cancel ``run``; ``done`` (interrupted) ends its log. False when it had finished."""

    async def wait(self, run: TaskRun) -> None:
        """Return once ``run`` has finished."""

    async def lookup(self, task_id: str, user_id: str) -> TaskRun | None:
        """``user_id``'s run of ``task_id`` that this node does not know (another node accepted it)."""

    async def refresh(self, runs: list[TaskRun]) -> None:
        """Bring what ``runs`` know of their tasks (events, records) up to date."""

    async def records(self, task_ids: list[str]) -> dict[str, str]:
        """The status (a ``TaskStatus``) of each of ``task_ids`` that has a stored record."""

    async def drain(self, runs: list[TaskRun], grace: float) -> None:
        """The server is shutting down: settle ``runs``, those not finished, within about ``grace`` seconds."""


class RunManager:
    def __init__(self, backend: RunBackend, *, max_running_per_user: int | None, keep_finished: int) -> None:
        """``max_running_per_user``: the runs of one user this node lets run at once (None when the
        backend limits them: the run queue counts a user's requests across nodes)."""
        self.backend = backend
        self.max_running_per_user = max_running_per_user
        self.keep_finished = keep_finished
        self.closing = False
        self._runs: OrderedDict[str, TaskRun] = OrderedDict()
        self._cancelling: set[asyncio.Task[bool]] = set()

    # -- what the routes ask -------------------------------------------------------------------

    def running(self, user_id: str | None = None) -> list[TaskRun]:
        """Runs not finished (including ones still starting), of one user or all, that this node knows."""
        return [r for r in self._runs.values() if not r.finished and (user_id is None or r.user_id == user_id)]

    def get(self, task_id: str, user_id: str) -> TaskRun | None:
        """The run, if it is this user's; another user's task is as absent as an unknown one."""
        run = self._runs.get(task_id)
        return run if run is not None and run.user_id == user_id else None

    def runs_of(self, user_id: str) -> list[TaskRun]:
        return [r for r in self._runs.values() if r.user_id == user_id]

    async def find(self, task_id: str, user_id: str) -> TaskRun | None:
        """The run of ``task_id`` if it is this user's, brought up to date; also one this node does
        not know yet that its backend holds (another node accepted it)."""
        run = self.get(task_id, user_id)
        if run is not None:
            await self.backend.refresh([run])
            return run
        run = await self.backend.lookup(task_id, user_id)
        if run is not None:
            self._keep(run)
        return run

    async def records(self, task_ids: list[str]) -> dict[str, str]:
        """The status of each of ``task_ids`` whose run is known, here or in the backend's records:
        what the API reports for a task before its checkpoint."""
        wanted = set(task_ids)
        known: dict[str, str] = {r.task_id: r.status for r in self._runs.values() if r.task_id in wanted}
        return known | await self.backend.records(task_ids)

    async def refresh(self, runs: list[TaskRun]) -> None:
        await self.backend.refresh(runs)

    def admit(self, user_id: str) -> None:
        """Raise the 503/429 a new request gets while shutting down or when its user is at the limit."""
        if self.closing:
            raise ApiError(503, "shutting_down", "the server is shutting down; retry on another instance or later",
                           headers={"Retry-After": "5"})
        limit = self.max_running_per_user
        if limit is not None and len(self.running(user_id)) >= limit:
            raise ApiError(429, "too_many_requests",
                           f"user {user_id!r} already has {limit} running request(s): "
                           "wait for one to finish (or cancel it)", headers={"Retry-After": "1"})

    async def start(self, run: TaskRun) -> TaskRun:
        """Start ``run`` (``run.request`` says what) on the backend. Input the agent rejects raises
        ``ValueError`` (or ``ApiError``) before anything is streamed."""
        self.admit(run.user_id)
        previous = self._runs.get(run.task_id)
        if previous is not None:
            await self.backend.refresh([previous])
            if previous.status in LIVE:
                raise ApiError(409, "conflict", f"task {run.task_id!r} is already {previous.status}")
            if run.kind != "resume":
                raise ApiError(409, "conflict", f"task id {run.task_id!r} already exists: choose a new one")
        self._keep(run)  # counted against the user's limit from now on
        try:
            await self.backend.launch(run)
        except BaseException:
            if self._runs.get(run.task_id) is run:
                if previous is not None:
                    self._runs[run.task_id] = previous
                else:
                    del self._runs[run.task_id]
            raise
        return run

    async def cancel(self, run: TaskRun) -> bool:
        """Cancel a running task; ``done`` (interrupted) ends its log. False when it had finished."""
        return await self.backend.cancel(run)

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
        await self.backend.wait(run)

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
        """Refuse new requests; let the cancels of streams that were hung up on go out (at most
        ``grace`` seconds); then the backend settles the runs still going (``RunBackend.drain``)."""
        self.closing = True
        if self._cancelling:
            await asyncio.wait(set(self._cancelling), timeout=max(grace, 1.0))
        await self.backend.drain(self.running(), grace)

    def _keep(self, run: TaskRun) -> None:
        """Know ``run`` (the newest), forgetting the oldest runs past ``keep_finished``: finished
        ones, or any when the backend keeps runs elsewhere."""
        self._runs[run.task_id] = run
        self._runs.move_to_end(run.task_id)
        elsewhere = self.backend.kept_elsewhere
        old = [tid for tid, r in self._runs.items() if tid != run.task_id and (elsewhere or r.finished)]
        for task_id in old[: max(0, len(old) - self.keep_finished)]:
            del self._runs[task_id]
