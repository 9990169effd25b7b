"""``LocalRuns``: the ``RunBackend`` of one process. Each run is an asyncio task that writes the
agent's events into the run's in-memory ``EventLog``; the log is its only record."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from saber.agent import Agent
from saber.events import Done, Event
from saber.observability.tracing import LocalRunTrace
from saber.runs.manager import TaskRun
from saber.runs.request import agent_stream

log = logging.getLogger(__name__)


class LocalRuns:
    kept_elsewhere = False
    """A run of this process is known only here: the manager forgets finished runs only."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    async def launch(self, run: TaskRun) -> None:
        """The agent's stream's first step runs here, so input it rejects raises ``ValueError``
        before anything is streamed; the rest is pumped into the log by a task of its own."""
        trace = LocalRunTrace(run.task_id, run.kind)
        try:
            with trace.current():
                stream = agent_stream(self.agent, run.request, task_id=run.task_id, user_id=run.user_id,
                                      resume=run.kind == "resume")
                first = await anext(aiter(stream))
                await _record(run, trace, first)  # before the pump starts: the log keeps the order
                run.pump = asyncio.create_task(self._pump(run, stream, trace), name=f"saber-server-run-{run.task_id}")
        except BaseException:
            trace.end()
            raise

    async def _pump(self, run: TaskRun, stream: AsyncIterator[Event], trace: LocalRunTrace) -> None:
        try:
            async with contextlib.aclosing(stream):  # type: ignore[type-var]
                async for event in stream:
                    await _record(run, trace, event)
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

    async def cancel(self, run: TaskRun) -> bool:
        if run.finished:
            return False
        if not self.agent.cancel(run.task_id, user_id=run.user_id) and run.pump is not None:
            run.pump.cancel()
        return True

    async def wait(self, run: TaskRun) -> None:
        if run.pump is not None:
            await asyncio.gather(asyncio.shield(run.pump), return_exceptions=True)

    async def lookup(self, task_id: str, user_id: str) -> TaskRun | None:
        """Nothing: a run of this process is known to its manager from its start."""
        return None

    async def refresh(self, runs: list[TaskRun]) -> None:
        """Nothing: the runs' logs are written in place."""

    async def records(self, task_ids: list[str]) -> dict[str, str]:
        """None: no record is kept beside the runs' logs."""
        return {}

    async def drain(self, runs: list[TaskRun], grace: float) -> None:
        """Give ``runs`` ``grace`` seconds, then cancel the rest (their react checkpoints say
        cancelled: resumable) and wait for their logs to end with ``done``."""
        pumps = [r.pump for r in runs if r.pump is not None]
        if not pumps:
            return
        _, pending = await asyncio.wait(pumps, timeout=grace)
        if pending:
            log.warning("cancelling %d request(s) still running after the %s s grace period", len(pending), grace)
            for run in runs:
                await self.cancel(run)
            await asyncio.wait(pending, timeout=10)


async def _record(run: TaskRun, trace: LocalRunTrace, event: Event) -> None:
    """Log an event; the log, the metrics and the trace all see it with its secrets redacted."""
    logged = await run.log.add(event.type, event.data)
    run.observer.observe(event.type, logged.data)
    trace.observe(event.type, logged.data)
