"""The one status a task is reported with, by the API and by ``saber tasks``."""

from __future__ import annotations


def reported_status(record: str | None, checkpoint: str | None) -> str:
    """The one status the API and ``saber tasks`` report for a task, from its run record (``TaskRun.status``,
    or the run queue's) and its checkpoint's state (``saber.agent.tasks.task_state``). While the
    run is not finished, or when it failed before it could run, the record says what it is; once
    it ended, the checkpoint does (it tells a react run that failed a step from one that was done)."""
    if record in ("queued", "running", "recovering", "failed"):
        return record
    return checkpoint or record or "unknown"
