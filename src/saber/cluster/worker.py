"""``Worker``: takes runs from the queue, runs them with its ``Agent`` and writes their events to Redis.

A run taken for the first time starts fresh; one an earlier worker started (it died, or handed
the run back when stopped) is resumed from its react checkpoint, so finished nodes are not run
again, or, without a checkpoint (a chat, tool or rag request), run again from the start. A node
that was running when its worker died runs again: tools see at-least-once execution.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from redis.asyncio import Redis

from saber.agent import Agent
from saber.agent.tasks import RESUMABLE, TASK_KIND
from saber.cluster.eventstream import StreamTakenOver, StreamWriter
from saber.cluster.queue import Claim, RunQueue
from saber.cluster.signals import cancel_channel, cancel_key, wake_channel
from saber.config import Settings
from saber.events import Done, Event
from saber.llm.types import Message
from saber.observability import metrics, tracing

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0
"""Seconds an idle worker waits for a wake-up before it looks at the queue again."""


@dataclass(kw_only=True)
class _Running:
    claim: Claim
    task: asyncio.Task[None] | None = None
    cancel_requested: bool = False
    handing_back: bool = False
    lost: bool = False
    cancel_sent: bool = False


@dataclass(kw_only=True)
class WorkerStats:
    finished: int = 0
    handed_back: int = 0
    lost: int = 0
    ids: list[str] = field(default_factory=list)


class Worker:
    def __init__(self, agent: Agent, queue: RunQueue, redis: Redis, settings: Settings, *, concurrency: int,
                 name: str | None = None) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency: must be at least 1, got {concurrency}")
        self.agent, self.queue, self.redis, self.settings = agent, queue, redis, settings
        self.concurrency = concurrency
        self.name = name or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.prefix = settings.cluster_redis_prefix
        self.stats = WorkerStats()
        self._runs: dict[str, _Running] = {}
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._beats = ThreadPoolExecutor(1, thread_name_prefix="saber-worker-lease")
        """The lease renewals' own thread: busy store calls in the shared pool cannot delay them."""

    # -- lifetime ------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop taking runs; ``run`` then lets running ones finish for ``cluster_worker_grace``
        seconds and hands the rest back to the queue."""
        self._stopping.set()
        self._wake.set()

    async def run(self) -> None:
        """Take and run runs until ``stop``."""
        helpers = [asyncio.create_task(self._listen(), name="saber-worker-listen"),
                   asyncio.create_task(self._heartbeat(), name="saber-worker-heartbeat")]
        try:
            await self._take_runs()
            await self._wind_down()
        finally:
            for helper in helpers:
                helper.cancel()
            await asyncio.gather(*helpers, return_exceptions=True)
            self._beats.shutdown(wait=False)

    async def _take_runs(self) -> None:
        while not self._stopping.is_set():
            if len(self._runs) >= self.concurrency:
                await self._sleep()
                continue
            try:
                claim = await asyncio.to_thread(self.queue.claim, self.name)
            except Exception:  # the database is unreachable for a moment: keep the worker alive
                log.exception("taking a run from the queue failed")
                claim = None
            if claim is None:
                await self._sleep()
                continue
            metrics.QUEUE_WAIT.observe(max(0.0, claim.waited))
            if claim.attempts > 1:
                metrics.RUNS_RESUMED.inc()
            running = _Running(claim=claim)
            self._runs[claim.task_id] = running
            running.task = asyncio.create_task(self._execute(running), name=f"saber-worker-run-{claim.task_id}")

    async def _sleep(self) -> None:
        self._wake.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), POLL_SECONDS)

    async def _wind_down(self) -> None:
        tasks = [r.task for r in self._runs.values() if r.task is not None]
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=self.settings.cluster_worker_grace)
        if not pending:
            return
        log.warning("handing %d run(s) back to the queue", len(pending))
        for running in list(self._runs.values()):
            running.handing_back = True
            self._stop_run(running)
        await asyncio.wait(pending, timeout=30)

    # -- signals -------------------------------------------------------------------------------

    async def _listen(self) -> None:
        cancels, wakes = cancel_channel(self.prefix), wake_channel(self.prefix)
        while True:
            try:
                async with self.redis.pubsub() as pubsub:
                    await pubsub.subscribe(cancels, wakes)
                    async for message in pubsub.listen():
                        if message.get("type") != "message":
                            continue
                        channel = _text(message["channel"])
                        if channel == wakes:
                            self._wake.set()
                        elif channel == cancels:
                            self._cancel(_text(message["data"]))
            except asyncio.CancelledError:
                raise
            except Exception:  # Redis went away: subscribe again; the cancel keys cover the gap
                log.exception("listening on Redis failed; retrying")
                await asyncio.sleep(1.0)

    def _cancel(self, task_id: str) -> None:
        running = self._runs.get(task_id)
        if running is not None:
            running.cancel_requested = True
            self._stop_run(running)

    def _stop_run(self, running: _Running) -> None:
        """Cancel the agent's request, once: a second cancel would interrupt its own clean-up
        (saving the checkpoint as cancelled, which a resume needs)."""
        if not running.cancel_sent:
            running.cancel_sent = self.agent.cancel(running.claim.task_id)

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.queue.lease_seconds / 3.0)
            ids = list(self._runs)
            try:
                held = await asyncio.get_running_loop().run_in_executor(self._beats, self.queue.renew, self.name, ids)
            except Exception:
                log.exception("renewing the run leases failed")
                continue
            for task_id in ids:
                running = self._runs.get(task_id)
                if task_id not in held and running is not None and not running.lost:
                    log.warning("run %s was taken over by another worker; stopping it here", task_id)
                    running.lost = True
                    self.stats.lost += 1
                    self._stop_run(running)

    # -- one run -------------------------------------------------------------------------------

    async def _execute(self, running: _Running) -> None:
        claim = running.claim
        writer = StreamWriter(self.redis, self.prefix, claim.task_id, maxlen=self.settings.cluster_events_maxlen,
                              ttl=self.settings.cluster_events_ttl)
        metrics.RUNS_RUNNING.inc()
        status = "done"
        try:
            await writer.open()
            if writer.ended and writer.seq > int(claim.request.get("after") or 0) and claim.attempts > 1:
                pass  # the worker before wrote the run's end, then died before saying so to the queue
            elif await self.redis.exists(cancel_key(self.prefix, claim.task_id)):
                await writer.append("done", _interrupted(claim), final=True)
                status = "cancelled"
            else:
                with tracing.span(tracing.RUN_SPAN, kind="CONSUMER", parent=claim.trace,
                                  **tracing.run_attributes(claim.task_id, **{"saber.attempt": claim.attempts})) as run_span:
                    status = await self._stream(running, writer, tracing.RunSpans(run_span))
        except StreamTakenOver as exc:
            running.lost = True
            log.warning("%s", exc)
        except Exception as exc:  # a bug or Redis gone: the run is handed back for another try
            log.exception("run %s failed in the worker", claim.task_id)
            running.handing_back = not isinstance(exc, ValueError)
        finally:
            self._runs.pop(claim.task_id, None)
            metrics.RUNS_RUNNING.dec()
            self._wake.set()
        await self._settle(running, status)

    async def _settle(self, running: _Running, status: str) -> None:
        task_id = running.claim.task_id
        try:
            if running.lost:
                return
            if running.handing_back:
                await asyncio.to_thread(self.queue.hand_back, self.name, task_id)
                self.stats.handed_back += 1
            else:
                await asyncio.to_thread(self.queue.finish, self.name, task_id, status)
                self.stats.finished += 1
                self.stats.ids.append(task_id)
        except Exception:  # the lease runs out and another worker settles it
            log.exception("settling run %s in the queue failed", task_id)

    async def _stream(self, running: _Running, writer: StreamWriter, spans: tracing.RunSpans) -> str:
        claim = running.claim
        observer = metrics.RunObserver()
        source = await self._source(claim)
        done: Event | None = None
        try:
            async with contextlib.aclosing(source) as events:  # type: ignore[type-var]
                async for event in events:
                    if running.cancel_requested:  # it may have arrived before the request began
                        self._stop_run(running)
                    if running.lost:
                        return "cancelled"
                    if event.type == "error" and _held_elsewhere(event.data):
                        # the checkpoint is still leased to a worker that lost this run but has not
                        # noticed yet: leave the run to the queue's lease; it is taken again after it
                        running.lost = True
                        self._stop_run(running)
                        return "cancelled"
                    if event.type == "done":
                        done = event  # written once the agent's request has wound down (its checkpoint says how it ended)
                        break
                    observer.observe(event.type, event.data)
                    spans.observe(event.type, event.data)
                    if event.type == "start":
                        await writer.append_start(event.data, after=int(claim.request.get("after") or 0),
                                                  attempt=claim.attempts)
                    else:
                        await writer.append(event.type, event.data)
        except ValueError as exc:  # the request itself was refused (a task id in use, a finished task)
            await writer.append("error", {"message": str(exc), "where": "worker"})
            await writer.append("done", _interrupted(claim), final=True)
            return "cancelled"
        if done is not None and not (running.handing_back or running.lost):
            observer.observe(done.type, done.data)
            spans.observe(done.type, done.data)
            await writer.append(done.type, done.data, final=True)
            return "cancelled" if done.data.get("interrupted") else "done"
        if running.handing_back or running.lost:
            return "cancelled"
        await writer.append("done", _interrupted(claim), final=True)  # a stream that ended without done
        return "cancelled"

    async def _source(self, claim: Claim) -> AsyncIterator[Event]:
        request = claim.request
        if claim.attempts > 1:
            await self._reopen_answer(claim)
        if claim.kind == "resume" or (claim.attempts > 1 and await self._resumable(claim.task_id)):
            return self.agent.resume(claim.task_id, user_id=claim.user_id)
        history = request.get("history")
        return self.agent.stream(
            str(request.get("message", "")), user_id=claim.user_id, mode=request.get("mode"),
            selected_tools=request.get("selected_tools"), use_rag=request.get("use_rag"), task_id=claim.task_id,
            history=[Message(role=m["role"], content=m["content"]) for m in history] if history is not None else None)

    async def _reopen_answer(self, claim: Claim) -> None:
        """The react task's checkpoint says its answer was written, yet its ``done`` never reached
        Redis (the worker died in between, its last events unsent): the answer is written again by
        a resume (the steps are not run again). The answer is not kept anywhere else."""
        store = self.agent.services.checkpoints
        saved = await store.load(claim.task_id) if store is not None else None
        if store is not None and saved is not None and saved.meta.get("kind") == TASK_KIND and saved.status in ("done", "failed"):
            await store.set_status(claim.task_id, "answering")

    async def _resumable(self, task_id: str) -> bool:
        store = self.agent.services.checkpoints
        if store is None:
            return False
        saved = await store.load(task_id)
        return saved is not None and saved.meta.get("kind") == TASK_KIND and saved.status in RESUMABLE


def _interrupted(claim: Claim) -> dict[str, Any]:
    return Done(answer="", mode=str(claim.request.get("mode") or "chat"), task_id=claim.task_id, interrupted=True).data


def _held_elsewhere(error: dict[str, Any]) -> bool:
    return error.get("where") == "checkpoint" and "running in another process" in str(error.get("message", ""))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
