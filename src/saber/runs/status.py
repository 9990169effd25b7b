"""The one status a task is reported with, by the API, by ``saber tasks`` and by the run queue the
workers settle runs in."""

from __future__ import annotations

from typing import Literal

TaskStatus = Literal["queued", "running", "recovering", "done", "cancelled", "failed"]
"""A run's status: queued (distributed mode: no worker has taken it yet), running, recovering
(distributed mode: its worker is gone, another takes it over), done, cancelled, failed (distributed
mode: the run could not run, say a malformed queued request; ``TaskRun.error`` says why)."""

Ended = Literal["done", "cancelled", "failed"]
"""How a run ended: what a worker settles a run in the queue with."""

LIVE: frozenset[str] = frozenset({"queued", "running", "recovering"})
"""The statuses of a run that has not ended: while one of these, its record says what it is."""


def run_status(record: TaskStatus | None, ended: Ended | None) -> TaskStatus:
    """A run's status from its record (the run queue's row, as last read; None for a run of this
    process, which has no record but its log) and how its event log ended (None while it is open).
    A record decides whenever there is one: what the workers settled is what the API, ``saber
    tasks`` and the queue all say, also in the moment between a worker writing a run's last event
    and settling its row (the log says done; the record, still running, says it a moment later)."""
    if record is not None:
        return record
    return ended if ended is not None else "running"


def reported_status(record: str | None, checkpoint: str | None) -> str:
    """The one status the API and ``saber tasks`` report for a task, from its run record (``TaskRun.status``,
    or the run queue's) and its checkpoint's state (``saber.agent.tasks.task_state``). While the
    run is not finished, or when it failed before it could run, the record says what it is; once
    it ended, the checkpoint does (it tells a react run that failed a step from one that was done)."""
    if record in LIVE or record == "failed":
        return record
    return checkpoint or record or "unknown"
