"""``Worker``: takes runs from the queue, runs them with its ``Agent`` and writes their events to Redis.

It is a procrastinate worker as the database sees it (a row of ``procrastinate_workers`` whose
heartbeat it sends every third of ``cluster.lease``; its jobs are ``doing`` under its id), with
a loop of its own rather than procrastinate's ``Worker``: that one stops when a database call of
its side tasks fails (a PostgreSQL restart would stop every worker), and it has no per-user
admission. This loop waits an outage out with the project's retry policy, and takes runs through
``RunQueue.claim`` (procrastinate's fetch under the per-user limit).

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
from saber.cluster.queue import MAX_ATTEMPTS, Claim, RunQueue
from saber.cluster.signals import cancel_channel, cancel_key, wake_channel
from saber.config import Settings
from saber.events import Done, Event
from saber.graph.checkpoint import Checkpoint
from saber.observability import metrics, tracing
from saber.outages import dependency_down, retrying
from saber.runs.request import RunRequest, agent_stream

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0
"""Seconds an idle worker waits for a wake-up before it looks at the queue again."""

OUTAGE_SECONDS = 600.0
"""How long a worker keeps trying a run again (resumed, with backoff) while PostgreSQL or Redis
is down, before it hands the run back to the queue for another worker."""


@dataclass(kw_only=True)
class _Running:
    claim: Claim
    task: asyncio.Task[None] | None = None
    cancel_requested: bool = False
    handing_back: bool = False
    lost: bool = False
    cancel_sent: bool = False
    failure: str = ""
    """Why a run that finished failed (its checkpoint says ``failed``): the queue's record keeps it."""


@dataclass(kw_only=True)
class WorkerStats:
    finished: int = 0
    handed_back: int = 0
    lost: int = 0
    retried: int = 0
    ids: list[str] = field(default_factory=list)


class Worker:
    def __init__(self, agent: Agent, queue: RunQueue, redis: Redis, settings: Settings, *, concurrency: int,
                 name: str | None = None) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency: must be at least 1, got {concurrency}")
        self.agent, self.queue, self.redis, self.settings = agent, queue, redis, settings
        self.concurrency = concurrency
        self.name = name or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.prefix = settings.cluster.redis_prefix
        self.stats = WorkerStats()
        self._runs: dict[str, _Running] = {}
        self.worker_id = 0
        """Its procrastinate worker id (registered when ``run`` starts; again if its row was pruned)."""
        self._claiming = False
        self._back_at = float("-inf")
        """When this worker last reached the database again after failing to (loop time)."""
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._beats = ThreadPoolExecutor(1, thread_name_prefix="saber-worker-heartbeat")
        """The heartbeat's own thread: busy store calls in the shared pool cannot delay it."""

    # -- lifetime ------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop taking runs; ``run`` then lets running ones finish for ``cluster_worker_grace``
        seconds and hands the rest back to the queue."""
        self._stopping.set()
        self._wake.set()

    async def run(self) -> None:
        """Take and run runs until ``stop``."""
        async for attempt in retrying(timeout=None, wait_initial=0.5, wait_max=10.0):
            with attempt:
                if attempt.num > 1:
                    self._back_at = asyncio.get_running_loop().time()
                self.worker_id = await asyncio.to_thread(self.queue.register_worker)
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
            try:  # a run still held is stalled at once: another worker takes it over without waiting a lease
                await asyncio.to_thread(self.queue.unregister_worker, self.worker_id)
            except Exception as exc:
                log.warning("unregistering worker %s failed: %s", self.name, exc)

    async def _take_runs(self) -> None:
        while not self._stopping.is_set():
            if len(self._runs) >= self.concurrency:
                await self._sleep()
                continue
            try:
                claim = await self._claim()
            except Exception:  # not an outage (those are waited out in _claim): a bug; keep the worker alive
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

    async def _claim(self) -> Claim | None:
        """The next run, waiting with backoff while the database cannot be reached."""
        async for attempt in retrying(timeout=None, wait_initial=0.5, wait_max=10.0):
            with attempt:
                if self._stopping.is_set():
                    return None
                self._claiming = True
                try:
                    return await asyncio.to_thread(self.queue.claim, self.worker_id, self.name)
                finally:
                    self._claiming = False
        return None

    async def _sleep(self) -> None:
        self._wake.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), POLL_SECONDS)

    async def _wind_down(self) -> None:
        tasks = [r.task for r in self._runs.values() if r.task is not None]
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=self.settings.cluster.worker_grace)
        if not pending:
            return
        log.warning("handing %d run(s) back to the queue", len(pending))
        for running in list(self._runs.values()):
            running.handing_back = True
            self._stop_run(running)
        await asyncio.wait(pending, timeout=30)

    # -- signals -------------------------------------------------------------------------------

    async def _listen(self) -> None:
        """Follow the cancel and wake-up channels; while Redis is down, connect again with backoff
        (the cancel keys cover the gap, and the queue is polled meanwhile)."""
        cancels, wakes = cancel_channel(self.prefix), wake_channel(self.prefix)
        while True:
            pubsub = self.redis.pubsub()
            try:
                async for attempt in retrying(timeout=None, wait_initial=0.5, wait_max=10.0):
                    with attempt:
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
            except Exception as exc:  # Redis went away after the subscription: subscribe again
                log.warning("listening on Redis failed (%s); connecting again", exc)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()

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
        """Send the worker's heartbeat every third of the lease, learn which runs it no longer
        holds (taken over while it was stalled) or were asked to abort, and put back the runs of
        stalled workers (procrastinate's stalled jobs) so that they are taken over. While the
        database cannot be reached, again with a short backoff, so the heartbeat is sent as soon
        as it is back (before another worker would take the runs over).

        A worker that could not reach the database puts back no one's runs for a lease after it
        is back: the other workers could not send their heartbeats either, and get that long to
        send one before their runs count as stalled (else a PostgreSQL restart would have every
        worker take the others' runs, and run again the steps whose checkpoint was waiting)."""
        beat = self.queue.lease_seconds / 3.0
        while True:
            await asyncio.sleep(beat)
            loop = asyncio.get_running_loop()
            try:
                sent = loop.time()
                async for attempt in retrying(timeout=None, wait_initial=0.25, wait_max=beat):
                    with attempt:
                        claiming, ids = self._claiming, list(self._runs)
                        got = await loop.run_in_executor(self._beats, self.queue.heartbeat, self.worker_id, ids)
                if loop.time() - sent > beat:  # it failed, or hung: the database was out of reach meanwhile
                    self._back_at = loop.time()
                self.worker_id = got.worker_id
                taken: list[str] = []
                if loop.time() - self._back_at >= self.queue.lease_seconds:
                    taken = await loop.run_in_executor(self._beats, self.queue.reap, self.worker_id)
                for task_id in got.orphans - set(self._runs) if not (claiming or self._claiming) else ():
                    log.warning("run %s is this worker's in the queue but not running here; handing it back", task_id)
                    await loop.run_in_executor(self._beats, self.queue.hand_back, self.worker_id, task_id)
            except Exception:
                log.exception("the worker's heartbeat failed")
                continue
            if taken:
                log.warning("runs of a stalled worker put back to be taken over: %s", ", ".join(taken))
                self._wake.set()
            for task_id in ids:
                running = self._runs.get(task_id)
                if running is None or running.lost:
                    continue
                if task_id not in got.held:
                    log.warning("run %s was taken over by another worker; stopping it here", task_id)
                    running.lost = True
                    self.stats.lost += 1
                    self._stop_run(running)
                elif task_id in got.abort and not running.cancel_requested:
                    log.info("run %s was asked to abort in the queue; cancelling it", task_id)
                    self._cancel(task_id)

    # -- one run -------------------------------------------------------------------------------

    async def _execute(self, running: _Running) -> None:
        claim = running.claim
        writer = StreamWriter(self.redis, self.prefix, claim.task_id, maxlen=self.settings.cluster.events_maxlen,
                              ttl=self.settings.cluster.events_ttl, patience=OUTAGE_SECONDS)
        # patience: while Redis is down the run goes on and its events wait (in order) to be written
        metrics.RUNS_RUNNING.inc()
        try:
            end, reason = await self._run(running, writer)
            await self._settle(running, end, reason)  # still listed: the heartbeat keeps it this worker's meanwhile
        finally:
            self._runs.pop(claim.task_id, None)
            metrics.RUNS_RUNNING.dec()
            self._wake.set()

    async def _run(self, running: _Running, writer: StreamWriter) -> tuple[str, str]:
        """Run the claim to its end: (done | cancelled | failed | retry | handback | lost, the reason a
        failed run failed). While PostgreSQL or Redis is down the run is tried again here, resumed from
        its checkpoint, with backoff (``OUTAGE_SECONDS`` at most); a run that is broken (its request
        malformed, or failing ``MAX_ATTEMPTS`` times) is failed with its reason."""
        claim = running.claim
        try:
            request = RunRequest.read(claim.request)
        except ValueError as exc:
            log.error("run %s: %s; failing it", claim.task_id, exc)
            await self._announce_failure(writer, claim, str(exc))
            return "failed", str(exc)
        tries = 0
        try:
            async for attempt in retrying(timeout=OUTAGE_SECONDS, wait_initial=0.5, wait_max=10.0, on=_again):
                with attempt:
                    if running.lost:
                        return "lost", ""
                    if running.handing_back or (tries and self._stopping.is_set()):
                        return "handback", ""
                    tries += 1
                    if tries > 1:
                        log.warning("run %s: trying again (try %d), resumed from its checkpoint", claim.task_id, tries)
                    end = await self._once(running, writer, request, claim.attempts + tries - 1)
                    return ("lost" if running.lost else "handback" if running.handing_back else end), running.failure
        except StreamTakenOver as exc:
            log.warning("%s", exc)
            return "lost", ""
        except Exception as exc:
            if _again(exc):
                log.warning("run %s: %s still failing after %s s; handing it back", claim.task_id, exc, OUTAGE_SECONDS)
                return "handback", ""
            log.exception("run %s failed in the worker", claim.task_id)
            if claim.attempts < MAX_ATTEMPTS:  # tried again after the queue's backoff (RETRY)
                return "retry", f"{type(exc).__name__}: {exc}"
            reason = f"the run failed in the worker {claim.attempts} times; the last time: {type(exc).__name__}: {exc}"
            await self._announce_failure(writer, claim, reason)
            return "failed", reason
        return "handback", ""

    async def _once(self, running: _Running, writer: StreamWriter, request: RunRequest, attempt: int) -> str:
        claim = running.claim
        await writer.open()
        if writer.ended and writer.seq > request.after and attempt > 1:
            return "cancelled" if writer.last_interrupted else "done"  # the end was written; the settle was not
        if await self.redis.exists(cancel_key(self.prefix, claim.task_id)):
            await writer.append("done", _interrupted(claim, request), final=True)
            return "cancelled"
        with tracing.span(tracing.RUN_SPAN, kind="CONSUMER", parent=claim.trace,
                          **tracing.run_attributes(claim.task_id, **{"saber.attempt": attempt})) as run_span:
            return await self._stream(running, writer, request, attempt, tracing.RunSpans(run_span))

    async def _announce_failure(self, writer: StreamWriter, claim: Claim, reason: str) -> None:
        """Tell the run's followers why it failed; with Redis down, the queue's record keeps the reason."""
        writer.patience = min(writer.patience, 5.0)
        try:
            await writer.open()
            await writer.append("error", {"message": reason, "where": "worker"})
            await writer.append("done", _interrupted(claim, None), final=True)
        except Exception as exc:
            log.warning("run %s: writing its failure to Redis failed: %s", claim.task_id, exc)

    async def _settle(self, running: _Running, end: str, reason: str) -> None:
        """Record the run's end in the queue, waiting out an outage however long it lasts (the run
        stays this worker's meanwhile; if this worker stops, another takes the run over, finds
        its end, and settles it)."""
        task_id = running.claim.task_id
        if end == "lost":
            return
        try:
            async for attempt in retrying(timeout=None, wait_initial=0.25, wait_max=5.0):
                with attempt:
                    if end == "handback":
                        await asyncio.to_thread(self.queue.hand_back, self.worker_id, task_id)
                    elif end == "retry":
                        await asyncio.to_thread(self.queue.retry, self.worker_id, task_id, reason)
                    elif end == "failed":
                        await asyncio.to_thread(self.queue.fail, self.worker_id, task_id, reason)
                    else:
                        await asyncio.to_thread(self.queue.finish, self.worker_id, task_id, end)
        except Exception:  # a bug: the next heartbeat finds the run an orphan and hands it back
            log.exception("settling run %s in the queue failed", task_id)
            return
        if end == "handback":
            self.stats.handed_back += 1
        elif end == "retry":
            self.stats.retried += 1
        else:
            self.stats.finished += 1
            self.stats.ids.append(task_id)

    async def _stream(self, running: _Running, writer: StreamWriter, request: RunRequest, attempt: int,
                      spans: tracing.RunSpans) -> str:
        claim = running.claim
        observer = metrics.RunObserver()
        source = await self._source(claim, request, attempt)
        done: Event | None = None
        try:
            async with contextlib.aclosing(source) as events:  # type: ignore[type-var]
                async for event in events:
                    if running.cancel_requested:  # it may have arrived before the request began
                        self._stop_run(running)
                    if running.lost:
                        return "cancelled"
                    if event.type == "error" and _held_elsewhere(event.data):
                        # the checkpoint is still leased to a runtime that has not let go yet (another
                        # worker that lost this run, or this worker's try before an outage): wait for it
                        self._stop_run(running)
                        raise _Paused(str(event.data.get("message", "")))
                    if event.type == "done":
                        done = event  # written once the agent's request has wound down (its checkpoint says how it ended)
                        break
                    observer.observe(event.type, event.data)
                    spans.observe(event.type, event.data)
                    if event.type == "start":
                        await writer.append_start(event.data, after=request.after, attempt=attempt)
                    else:
                        await writer.append(event.type, event.data)
        except ValueError as exc:  # the request itself was refused (a task id in use, a finished task)
            await writer.append("error", {"message": str(exc), "where": "worker"})
            await writer.append("done", _interrupted(claim, request), final=True)
            return "cancelled"
        finally:
            running.cancel_sent = False  # the next try's request is a new one: a cancel must reach it
        if done is not None and not (running.handing_back or running.lost):
            saved = await self._check_recorded(running, done)
            observer.observe(done.type, done.data)
            spans.observe(done.type, done.data)
            await writer.append(done.type, done.data, final=True)
            if done.data.get("interrupted"):
                return "cancelled"
            if saved is not None and saved.status == "failed":  # the queue says what the checkpoint says
                running.failure = _failed_steps(saved)
                return "failed"
            return "done"
        if running.handing_back or running.lost:
            return "cancelled"
        await writer.append("done", _interrupted(claim, request), final=True)  # a stream that ended without done
        return "cancelled"

    async def _check_recorded(self, running: _Running, done: Event) -> Checkpoint | None:
        """The react task's checkpoint once its run has ended (None for another kind of run).
        Raises ``_Paused`` when the run ended without its checkpoint saying so (a write failed past
        the runtime's patience, or the run stopped itself): the run is then resumed, and its end
        written and settled only once the checkpoint is terminal. One truth: the queue never calls
        a run finished that its checkpoint calls running, nor done when it says failed."""
        if running.cancel_requested:
            return None
        store = self.agent.services.checkpoints
        if store is None:
            return None
        saved = await store.load(running.claim.task_id)
        if saved is None or saved.meta.get("kind") != TASK_KIND:
            return None
        if saved.status in ("done", "failed"):
            return saved
        raise _Paused(f"task {running.claim.task_id} ended its run with its checkpoint {saved.status!r}"
                      f"{' (interrupted)' if done.data.get('interrupted') else ''}")

    async def _source(self, claim: Claim, request: RunRequest, attempt: int) -> AsyncIterator[Event]:
        if attempt > 1:
            await self._reopen_answer(claim)
        resume = claim.kind == "resume" or (attempt > 1 and await self._resumable(claim.task_id))
        return agent_stream(self.agent, request, task_id=claim.task_id, user_id=claim.user_id, resume=resume)

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


def _interrupted(claim: Claim, request: RunRequest | None) -> dict[str, Any]:
    mode = request.mode if request is not None and request.mode else "chat"
    return Done(answer="", mode=mode, task_id=claim.task_id, interrupted=True).data


class _Paused(Exception):
    """The run stopped before its end was recorded (its checkpoint store or Redis was down longer
    than it waits, or its checkpoint was still held): it is resumed, not settled."""


def _again(exc: BaseException) -> bool:
    """Try the run again here: a dependency is down, or the run paused."""
    return isinstance(exc, _Paused) or dependency_down(exc)


def _held_elsewhere(error: dict[str, Any]) -> bool:
    return error.get("where") == "checkpoint" and "running in another process" in str(error.get("message", ""))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _failed_steps(saved: Checkpoint) -> str:
    """Which steps of a finished react task failed, and why (the record of a run that failed)."""
    failed = [f"{node.id} ({node.tool or node.agent}): {node.error or 'failed'}"
              for node in saved.nodes if node.status.value == "failed"]
    return ("failed steps: " + "; ".join(failed) if failed else "the task's checkpoint says it failed")[:2000]
