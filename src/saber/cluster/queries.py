"""The run queue's statements in SQLAlchemy Core, compiled by ``python -m saber.db.compile`` into
``queries_sql.py``, which ``RunQueue`` runs (see ``saber.db.statements``).

PostgreSQL only (the queue is): each is a ``PerDialect`` with no SQLite statement. They read and
write ``saber_runs`` (the record of every run) and read procrastinate's jobs and workers; what
changes a job (defer, fetch, finish, retry, cancel, heartbeats) stays procrastinate's own queries."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from saber.db.statements import PerDialect
from saber.db.tables import procrastinate_jobs, procrastinate_workers
from saber.db.tables import runs as runs_table

_p = sa.bindparam
r = runs_table.alias("r")
j = procrastinate_jobs.alias("j")
w = procrastinate_workers.alias("w")
_TASK = runs_table.c.task_id == _p("task_id")
_JOB = runs_table.c.job_id == _p("job_id")
_DOING = j.c.status == "doing"


def _now() -> sa.ColumnElement[Any]:
    """The server's clock as epoch seconds, read when the statement runs (not the transaction's start)."""
    return sa.extract("epoch", sa.func.clock_timestamp())


_ALIVE = sa.and_(w.c.id.is_not(None),
                 w.c.last_heartbeat >= sa.func.now() - sa.func.make_interval(0, 0, 0, 0, 0, 0, _p("lease_seconds")))
"""A job's worker (``w``, joined on the job's ``worker_id``) sent a heartbeat within ``:lease_seconds``."""

_JOB_WORKER = j.outerjoin(w, w.c.id == j.c.worker_id)
_RUN_JOB = r.join(j, j.c.id == r.c.job_id)
_DUE = sa.and_(j.c.status == "todo", j.c.scheduled_at.is_(None) | (j.c.scheduled_at <= sa.func.now()))
"""A waiting job whose time has come."""

_record = (sa.select(r.c.task_id, r.c.user_id, r.c.kind, r.c.request, r.c.enqueued_at, r.c.worker, r.c.attempts,
                     r.c.error, r.c.outcome, r.c.recovering, r.c.job_id, j.c.status, _ALIVE)
           .select_from(r.outerjoin(j, j.c.id == r.c.job_id).outerjoin(w, w.c.id == j.c.worker_id)))

RECORD = PerDialect(postgresql=_record.where(r.c.task_id == _p("task_id")))
"""A run's record, its job's status and whether a live worker holds it."""

RECORDS = PerDialect(postgresql=_record.where(r.c.task_id == sa.any_(_p("task_ids"))))
"""The records of ``:task_ids`` (a list)."""

LOCK = PerDialect(postgresql=sa.select(sa.func.pg_advisory_xact_lock(sa.func.hashtext(_p("key")))))
"""The advisory lock named ``:key``, waited for, until the transaction ends."""

TRY_LOCK = PerDialect(postgresql=sa.select(sa.func.pg_try_advisory_xact_lock(sa.func.hashtext(_p("key")))))
"""The advisory lock named ``:key`` if no other transaction holds it: whether it was taken."""

NOW = PerDialect(postgresql=sa.select(_now()))

WAITING = PerDialect(postgresql=sa.select(sa.func.count()).select_from(procrastinate_jobs).where(
    procrastinate_jobs.c.queue_name == _p("queue"), procrastinate_jobs.c.task_name == _p("task_name"),
    procrastinate_jobs.c.status.in_(("todo", "doing"))))
"""Jobs of ``:task_name`` in ``:queue`` (one user's) waiting or running."""

DELETE_RUN = PerDialect(postgresql=sa.delete(runs_table).where(_TASK))

INSERT_RUN = PerDialect(postgresql=sa.insert(runs_table).values(
    task_id=_p("task_id"), user_id=_p("user_id"), kind=_p("kind"), request=_p("request"),
    enqueued_at=_p("enqueued_at"), trace=_p("trace"), job_id=_p("job_id"), attempts=0))

RUN_JOB_FOR_UPDATE = PerDialect(postgresql=sa.select(runs_table.c.job_id).where(_TASK).with_for_update())
"""A run's job id, its record locked."""

JOB_FOR_UPDATE = PerDialect(postgresql=sa.select(j.c.status, _ALIVE).select_from(_JOB_WORKER)
                            .where(j.c.id == _p("job_id")).with_for_update(of=j))
"""A job's status and whether a live worker holds it, the job locked."""

CANCELLED = PerDialect(postgresql=sa.update(runs_table).where(_TASK).values(
    outcome="cancelled", worker=None, recovering=False, finished_at=_now()))

DEPTH = PerDialect(postgresql=sa.select(sa.func.count()).select_from(procrastinate_jobs).where(
    procrastinate_jobs.c.task_name == _p("task_name"), procrastinate_jobs.c.status == "todo"))
"""Jobs of ``:task_name`` waiting."""

RUNNING_BY_USER = PerDialect(postgresql=sa.select(r.c.user_id, sa.func.count())
                             .select_from(j.join(r, r.c.job_id == j.c.id).outerjoin(w, w.c.id == j.c.worker_id))
                             .where(_DOING, _ALIVE).group_by(r.c.user_id))
"""Runs a live worker holds, per user."""

_running = sa.func.count().filter(sa.and_(_DOING, _ALIVE)).label("running")
_oldest = sa.func.min(j.c.id).filter(_DUE).label("oldest")
CANDIDATES = PerDialect(postgresql=sa.select(j.c.queue_name, _running, _oldest).select_from(_JOB_WORKER)
                        .where(j.c.task_name == _p("task_name"), j.c.status.in_(("todo", "doing")))
                        .group_by(j.c.queue_name).having(sa.func.count().filter(_DUE) > 0)
                        .order_by(_running, _oldest).limit(16))
"""The queues (users) with a due job of ``:task_name``: their running count and oldest due job,
the fewest running first, then the oldest waiting."""

RUNNING_IN_QUEUE = PerDialect(postgresql=sa.select(sa.func.count()).select_from(_JOB_WORKER)
                              .where(j.c.queue_name == _p("queue"), _DOING, _ALIVE))
"""Jobs of ``:queue`` a live worker holds."""

TAKE = PerDialect(postgresql=sa.update(runs_table).where(_JOB, runs_table.c.outcome.is_(None)).values(
    attempts=runs_table.c.attempts + 1, worker=_p("worker"), recovering=False, started_at=_now()).returning(
    runs_table.c.task_id, runs_table.c.user_id, runs_table.c.kind, runs_table.c.request, runs_table.c.attempts,
    runs_table.c.enqueued_at, _now() - runs_table.c.enqueued_at, runs_table.c.trace))
"""The open record of the job a worker (``:worker``) fetched, now taken: what to run, and the wait."""

WORKER_EXISTS = PerDialect(postgresql=sa.select(sa.literal(1)).select_from(procrastinate_workers)
                           .where(procrastinate_workers.c.id == _p("worker_id")))

WORKER_RUNS = PerDialect(postgresql=sa.select(r.c.task_id, j.c.abort_requested).select_from(_RUN_JOB)
                         .where(_DOING, j.c.worker_id == _p("worker_id")))
"""The runs a worker holds, and whether each was asked to abort."""

STALLED_RUNS = PerDialect(postgresql=sa.select(j.c.id, r.c.task_id, j.c.abort_requested).select_from(_RUN_JOB)
                          .where(j.c.id == sa.any_(_p("job_ids")), _DOING).order_by(j.c.id)
                          .with_for_update(of=j, skip_locked=True))
"""Of ``:job_ids`` (stalled jobs), those of runs still running, locked, skipping any another reaper holds."""

JOB_CANCELLED = PerDialect(postgresql=sa.update(runs_table).where(_JOB).values(
    outcome="cancelled", worker=None, finished_at=_now()))

JOB_RECOVERING = PerDialect(postgresql=sa.update(runs_table).where(_JOB).values(recovering=True))

HELD = PerDialect(postgresql=sa.select(j.c.id, r.c.request, j.c.abort_requested).select_from(_RUN_JOB)
                  .where(r.c.task_id == _p("task_id"), _DOING, j.c.worker_id == _p("worker_id"))
                  .with_for_update(of=(r, j)))
"""A run's job, request and abort flag if ``:worker_id`` holds it; the record and job locked."""

FINISHED = PerDialect(postgresql=sa.update(runs_table).where(_TASK).values(
    outcome=_p("outcome"), error=_p("error"), request=_p("request"), finished_at=_now(), recovering=False))
"""How a run ended, why, and its request (redacted)."""

ATTEMPTS = PerDialect(postgresql=sa.select(runs_table.c.attempts).where(_TASK))

FAILED = PerDialect(postgresql=sa.update(runs_table).where(_TASK).values(
    outcome="failed", error=_p("error"), request=_p("request"), finished_at=_now()))

HANDED_BACK_CANCELLED = PerDialect(postgresql=sa.update(runs_table).where(_TASK).values(
    outcome="cancelled", finished_at=_now()))
"""A run asked to abort that its worker hands back: cancelled (its ``worker`` kept)."""
