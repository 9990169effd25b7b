"""``QueuedRuns``: where the API node's ``RunManager`` runs requests in the distributed mode.

This node runs nothing itself: a request becomes a row of the run queue (answered 409 for a task
id queued or running, 429 past ``cluster_max_waiting_per_user``) and the ``start`` event of its
stream, written at once so that the client knows it was accepted while it waits for a worker.
Its events are read from the task's Redis stream, so this node serves the events of any task,
whichever node took it and whichever worker runs it. A cancel marks a waiting run cancelled in
the queue, or reaches the worker running it through Redis.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Mapping
from typing import TypeVar

from redis.asyncio import Redis

from saber.agent import Agent
from saber.agent.tasks import resumable_task
from saber.agent.validation import check_query, check_selected_tools, check_task_id, check_user_id
from saber.cluster.eventstream import RedisEventLog, StreamTakenOver, StreamWriter
from saber.cluster.queue import DuplicateTask, QueueFull, RunQueue
from saber.cluster.signals import cancel_key, request_cancel, wake_channel
from saber.config import Settings
from saber.events import Done, Start
from saber.observability import metrics, tracing
from saber.outages import dependency_down
from saber.redact import redact
from saber.runs.errors import ApiError
from saber.runs.manager import RunManager, TaskRun
from saber.runs.request import RunRequest

log = logging.getLogger(__name__)

T = TypeVar("T")


class QueuedRuns:
    """The distributed mode's ``RunBackend``: a run is a row of the run queue that a worker takes,
    and its events are the task's Redis stream."""

    kept_elsewhere = True
    """The queue and Redis keep every run: the manager's runs are what this node read of them."""

    def __init__(self, agent: Agent, queue: RunQueue, redis: Redis, settings: Settings) -> None:
        self.agent, self.queue, self.redis, self.settings = agent, queue, redis, settings
        self.prefix = settings.cluster.redis_prefix

    def _log(self, task_id: str, floor: int = 0) -> RedisEventLog:
        return RedisEventLog(self.redis, self.prefix, task_id, floor=floor)

    async def launch(self, run: TaskRun) -> None:
        """Queue ``run``: its request is checked as the worker would check it (422), the queue
        refuses a task id queued or running (409) and a user past ``cluster_max_waiting_per_user``
        (429); then its ``start`` is written, so its client knows it was accepted while it waits."""
        query = _check(self.agent, self.settings, run, run.request)
        if run.kind == "resume":  # refused here as the in-process server refuses it: a 409 before any stream
            saved = await resumable_task(self.agent.services.checkpoints, run.task_id, user_id=run.user_id, running=())
            query = run.query = str(saved.meta.get("query", ""))
        after = await _reachable(self._log(run.task_id).last_seq())  # a resumed task's earlier events
        request = run.request = run.request.model_copy(update={"after": after})
        await _reachable(self.redis.delete(cancel_key(self.prefix, run.task_id)))  # a cancel of an earlier run is spent
        try:
            with tracing.span("enqueue saber.run", kind="PRODUCER", **{"saber.task_id": run.task_id}):
                await _reachable(asyncio.to_thread(self.queue.enqueue, task_id=run.task_id, user_id=run.user_id,
                                                   kind=run.kind, request=request, trace=tracing.traceparent()))
        except DuplicateTask as exc:
            raise ApiError(409, "conflict", str(exc)) from None
        except QueueFull as exc:
            raise ApiError(429, "too_many_requests", f"{exc}: wait for one to finish (or cancel it)",
                           headers={"Retry-After": "1"}) from None
        run.log, run.record = self._log(run.task_id, floor=after), "queued"
        try:  # queued: a worker runs it and writes its events even if Redis fails this node now
            await self._announce(run, after, query)
            await self.redis.publish(wake_channel(self.prefix), run.task_id)
        except Exception as exc:
            if not dependency_down(exc):
                raise
            log.warning("announcing task %s failed (%s); the worker that takes it writes its start", run.task_id, exc)

    async def _announce(self, run: TaskRun, after: int, query: str) -> None:
        """Write the run's ``start`` (the event after ``after``) unless a worker that took the run wrote it first."""
        writer = StreamWriter(self.redis, self.prefix, run.task_id, maxlen=self.settings.cluster.events_maxlen,
                              ttl=self.settings.cluster.events_ttl, seq=after)
        with contextlib.suppress(StreamTakenOver):
            await writer.append("start", Start(task_id=run.task_id, query=query, user_id=run.user_id).data)

    async def lookup(self, task_id: str, user_id: str) -> TaskRun | None:
        """The run of ``task_id`` from its queue row, if it is ``user_id``'s, whichever node accepted it."""
        row = await _reachable(asyncio.to_thread(self.queue.get, task_id))
        if row is None or row["user_id"] != user_id:
            return None
        stored = row["request"]
        try:
            request = RunRequest.read(stored)
        except ValueError:  # its record says failed, and why; the message is shown as stored
            request = RunRequest()
        message = request.message or (stored.get("message") if isinstance(stored, Mapping) else None) or ""
        run = TaskRun(task_id=task_id, user_id=user_id, kind=row["kind"], query=redact(str(message)), request=request,
                      started=float(row["enqueued_at"]), log=self._log(task_id, floor=request.after),
                      record=row["status"], error=row["error"])
        await self._load(run)
        return run

    async def refresh(self, runs: list[TaskRun]) -> None:
        """Read the events of ``runs`` that were not finished, and their records in the queue (which
        decide their status: queued, running, recovering, or failed with its reason). A run still
        being queued has nothing stored to read yet (its log is not the stream's until it is)."""
        live = [r for r in runs if isinstance(r.log, RedisEventLog)
                and (not r.finished or r.record not in ("done", "cancelled", "failed"))]
        if not live:
            return
        records = await _reachable(asyncio.to_thread(self.queue.records, [r.task_id for r in live]))
        for run in live:
            if not run.finished:
                await self._load(run)
            run.record, run.error = records.get(run.task_id, (run.record, run.error))  # type: ignore[assignment]

    async def records(self, task_ids: list[str]) -> dict[str, str]:
        """The queue's status of each of ``task_ids`` it holds (see ``RunQueue.statuses``)."""
        return await _reachable(asyncio.to_thread(self.queue.statuses, task_ids))

    async def _load(self, run: TaskRun) -> None:
        """Read the run's events; with Redis down, keep what was read (the status comes from the queue)."""
        if not isinstance(run.log, RedisEventLog):  # still being queued: nothing stored yet
            return
        try:
            await run.log.load()
        except Exception as exc:
            if not dependency_down(exc):
                raise
            log.warning("reading the events of task %s failed: %s", run.task_id, exc)

    async def cancel(self, run: TaskRun) -> bool:
        """Mark a waiting run cancelled in the queue (and end its stream here), or signal the worker
        running it through Redis."""
        await self._load(run)
        if run.finished:
            return False
        if await _reachable(asyncio.to_thread(self.queue.cancel_waiting, run.task_id)):
            await _reachable(self._end_waiting(run))  # no worker holds it: this node writes its end
        else:
            await _reachable(request_cancel(self.redis, self.prefix, run.task_id))
        return True

    async def _end_waiting(self, run: TaskRun) -> None:
        writer = StreamWriter(self.redis, self.prefix, run.task_id, maxlen=self.settings.cluster.events_maxlen,
                              ttl=self.settings.cluster.events_ttl)
        await writer.open()
        if writer.ended and writer.seq > 0:
            return
        mode = run.request.mode or "chat"
        try:
            await writer.append("done", Done(answer="", mode=mode, task_id=run.task_id, interrupted=True).data,
                                final=True)
        except StreamTakenOver:  # a worker wrote in between: its events stand
            pass
        metrics.RUNS.labels(mode, "cancelled").inc()

    async def wait(self, run: TaskRun) -> None:
        log_ = run.log
        async for _ in log_.follow(log_.events[-1].seq if log_.events else 0):
            pass

    async def drain(self, runs: list[TaskRun], grace: float) -> None:
        """Nothing: the runs keep going on the workers (the manager has let the cancels of streams
        that were hung up on go out)."""


async def _reachable(work: Awaitable[T]) -> T:
    """``work``, or the 503 a request gets while PostgreSQL or Redis cannot be reached."""
    try:
        return await work
    except Exception as exc:
        if dependency_down(exc):
            raise ApiError(503, "unavailable", "the run queue or its event store cannot be reached for a moment; "
                                               "retry shortly", headers={"Retry-After": "2"}) from None
        raise


def _check(agent: Agent, settings: Settings, run: TaskRun, request: RunRequest) -> str:
    """What the worker would refuse at once, refused here with a 422 before anything is queued.
    Returns the query as the worker's agent takes it ("" for a resume)."""
    query = ""
    try:
        check_task_id(run.task_id)
        check_user_id(run.user_id)
        if run.kind != "resume":
            query = check_query(request.message, max_chars=settings.agent.max_query_chars)
        selected = check_selected_tools(request.selected_tools)
        if selected is not None:
            agent.registry.filter(selected)
    except ValueError as exc:
        raise ApiError(422, "invalid_request", str(exc)) from None
    return query


def queued_run_manager(agent: Agent, queue: RunQueue, redis: Redis, settings: Settings) -> RunManager:
    """The API node's run manager in the distributed mode: the one ``RunManager``, on ``QueuedRuns``.
    No per-node limit of running requests: the queue counts a user's requests across nodes."""
    return RunManager(QueuedRuns(agent, queue, redis, settings), max_running_per_user=None,
                      keep_finished=settings.server.keep_finished)
