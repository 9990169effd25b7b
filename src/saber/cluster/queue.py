"""``RunQueue``: the durable run queue of the distributed mode, on procrastinate (migration 0008).

Each accepted request is a procrastinate job (task ``saber.run``) in the same PostgreSQL as the
checkpoints, plus a row of ``saber_runs``: the task's record (its user, kind, request, and how it
ended, with why a failed run failed), which the API and ``saber tasks`` read. What procrastinate
owns: the jobs and their states (todo, doing, succeeded, failed, aborted, cancelled), the
``queueing_lock`` and ``lock`` on the task id (no two waiting jobs of one task, no two running),
taking a job (``procrastinate_fetch_job_v2``: ``FOR UPDATE SKIP LOCKED``), worker heartbeats and
finding the jobs of stalled workers, retrying a job (now, or later with its ``RetryStrategy``'s
backoff) and cancelling or aborting one.

What procrastinate has not, built here on top of it: a per-user limit of N running jobs across
all workers, and fairness between users. Every user has a procrastinate queue of their own;
a worker picks the user with the fewest running jobs (then the oldest waiting job) and calls
procrastinate's fetch on that user's queue, in one transaction under an advisory lock on the
user (tried, not waited for: a user locked by another claimer is skipped), so two workers taking
jobs at once cannot both take the user's last slot.

A job whose worker stopped its heartbeat for ``lease_seconds`` (it died) is ``recovering``; any
other worker puts it back (``reap``) and takes it like a queued one. Every method blocks (it is
a database call): the async callers run them with ``asyncio.to_thread``.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from typing import Any

from procrastinate import App, RetryStrategy, SyncPsycopgConnector, sql
from procrastinate import jobs as pjobs

from saber.cluster import queries_sql as q
from saber.db.database import Database, Tx
from saber.redact import redact_value
from saber.runs.request import RunRequest

log = logging.getLogger(__name__)

TASK_NAME = "saber.run"
"""The procrastinate task of every run."""

MAX_ATTEMPTS = 5
"""Times a run is taken before a failure that is not an outage (a bug, a crash of its worker each
time) fails it for good, with its reason: a run that cannot work is not retried forever."""

RETRY = RetryStrategy(max_attempts=MAX_ATTEMPTS - 1, wait=1, exponential_wait=2)
"""When a run that failed in its worker is tried again: 3, 5, 9, 17 s after each failure
(procrastinate's backoff); after ``MAX_ATTEMPTS`` takes it is failed with its reason."""

_ENDED = {"succeeded": "done", "failed": "failed", "aborted": "cancelled", "cancelled": "cancelled"}
"""A job that ended without its record saying how (a job settled by hand): its status as the API says it."""

_JOB_END = {"done": "succeeded", "cancelled": "aborted", "failed": "failed"}


class QueueFull(Exception):
    """The user already has as many requests waiting or running as the queue accepts."""


class DuplicateTask(Exception):
    """A task with this id is already queued or running."""


@dataclass(frozen=True, kw_only=True)
class Claim:
    """A run a worker took: what to run, and how often it was taken before (a dead worker's run)."""

    task_id: str
    user_id: str
    kind: str
    request: Any
    """The stored request as JSON read it: ``RunRequest.read`` validates it (a row it refuses is
    malformed: written by an older version, or by hand)."""
    attempts: int
    """Times taken, this one included: above 1, an earlier worker started it."""
    enqueued_at: float
    waited: float
    """Seconds from the request to this claim."""
    trace: str
    job_id: int
    """The procrastinate job."""


@dataclass(frozen=True, kw_only=True)
class Beat:
    """What a worker's heartbeat learnt: the runs it still holds, those asked to abort, its id."""

    held: set[str]
    abort: set[str]
    worker_id: int
    """Its procrastinate worker id: a new one when its row was pruned (it was stalled that long)."""
    orphans: set[str]
    """Runs it holds in the queue that were not in the ids it gave (one it could not settle)."""


def queue_name(user_id: str) -> str:
    """The procrastinate queue of ``user_id``'s runs (a queue name is at most 128 characters)."""
    return "saber:" + hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:32]


def _json(text: Any) -> Any:
    """A stored request: its JSON, or the text itself when it is not JSON (the worker fails that run)."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _driver(tx: Tx) -> Any:
    """The psycopg connection of ``tx``, for procrastinate's queries: they run in ``tx``'s
    transaction (psycopg begins it on the first statement), so ``tx``'s commit commits them."""
    return tx.driver_connection


def _status(outcome: str | None, recovering: bool, job_status: str | None, alive: bool) -> str:
    """A run's status as the API says it: how it ended if it did, else what its job is doing."""
    if outcome:
        return outcome
    if job_status == "todo":
        return "recovering" if recovering else "queued"
    if job_status == "doing":
        return "running" if alive else "recovering"
    return _ENDED.get(str(job_status), "failed")


def _check_reuse(task_id: str, status: str, kind: str) -> None:
    """Raise ``DuplicateTask`` unless a run of ``kind`` may take the id of a task that is ``status``."""
    if status in ("queued", "running", "recovering"):
        raise DuplicateTask(f"task {task_id!r} is already {status}")
    if kind != "resume":
        raise DuplicateTask(f"task id {task_id!r} already exists: choose a new one (or resume that task)")


class RunQueue:
    def __init__(self, db: Database, *, lease_seconds: float, max_running_per_user: int,
                 max_waiting_per_user: int = 1000) -> None:
        if db.dialect != "postgresql":
            raise ValueError("the run queue needs PostgreSQL (database_url): the SQLite default runs requests in-process")
        self.db = db
        self.lease_seconds = lease_seconds
        self.max_running_per_user = max_running_per_user
        self.max_waiting_per_user = max_waiting_per_user
        self.connector = SyncPsycopgConnector()
        """procrastinate's connector, used on the connection of our own transactions (never its pool)."""
        self.app = App(connector=self.connector)

    def _one(self, tx: Tx, query: str, **arguments: Any) -> dict[str, Any]:
        """One row of procrastinate's query ``query`` (a name in ``procrastinate.sql.queries``), in ``tx``."""
        return self.connector.execute_query_one_with_connection(_driver(tx), sql.queries[query], **arguments)

    def _all(self, tx: Tx, query: str, **arguments: Any) -> list[dict[str, Any]]:
        return self.connector.execute_query_all_with_connection(_driver(tx), sql.queries[query], **arguments)

    def _record(self, tx: Tx, task_id: str) -> tuple[Any, ...] | None:
        row = tx.run(q.RECORD, {"lease_seconds": self.lease_seconds, "task_id": task_id}).fetchone()
        return tuple(row) if row is not None else None

    # -- API side ------------------------------------------------------------------------------

    def enqueue(self, *, task_id: str, user_id: str, kind: str, request: RunRequest, trace: str = "") -> float:
        """Add a run; returns its enqueue time. A task id that is queued, running or recovering
        raises ``DuplicateTask``; a finished one is queued again (``kind`` resume)."""
        queue = queue_name(user_id)
        with self.db.transaction() as tx:
            tx.run(q.LOCK, {"key": "saber-run-task:" + task_id})
            tx.run(q.LOCK, {"key": "saber-run-user:" + queue})
            row = self._record(tx, task_id)
            if row is not None:
                _check_reuse(task_id, _status(row[8], row[9], row[11], row[12]), kind)
            waiting = tx.run(q.WAITING, {"queue": queue, "task_name": TASK_NAME}).fetchone()[0]
            if waiting >= self.max_waiting_per_user:
                raise QueueFull(f"user {user_id!r} already has {waiting} request(s) queued or running")
            now = float(tx.run(q.NOW).fetchone()[0])
            job = self.app.job_manager.defer_job(
                pjobs.Job(queue=queue, task_name=TASK_NAME, lock=task_id, queueing_lock=task_id,
                          task_kwargs={"task_id": task_id}), connection=_driver(tx))
            tx.run(q.DELETE_RUN, {"task_id": task_id})
            tx.run(q.INSERT_RUN, {"task_id": task_id, "user_id": user_id, "kind": kind, "request": request.stored(),
                                  "enqueued_at": now, "trace": trace, "job_id": job.id})
        return now

    def get(self, task_id: str) -> dict[str, Any] | None:
        """The record of ``task_id``; its ``status`` as ``statuses`` says it (``recovering`` included)."""
        with self.db.transaction() as tx:
            row = self._record(tx, task_id)
        if row is None:
            return None
        return {"task_id": row[0], "user_id": row[1], "kind": row[2], "request": _json(row[3]),
                "status": _status(row[8], row[9], row[11], row[12]), "enqueued_at": float(row[4]), "worker": row[5],
                "attempts": int(row[6]), "error": row[7]}

    def statuses(self, task_ids: list[str]) -> dict[str, str]:
        """The status of each of ``task_ids`` the queue holds: queued, running (a live worker holds
        it), recovering (its worker is gone, or it is waiting for another after that), done,
        cancelled or failed."""
        return {t: r[0] for t, r in self.records(task_ids).items()}

    def records(self, task_ids: list[str]) -> dict[str, tuple[str, str | None]]:
        """(status as ``statuses`` says it, the reason a failed run failed) of each of ``task_ids``."""
        if not task_ids:
            return {}
        with self.db.transaction() as tx:
            rows = tx.run(q.RECORDS, {"lease_seconds": self.lease_seconds, "task_ids": task_ids}).fetchall()
        return {str(r[0]): (_status(r[8], r[9], r[11], r[12]), r[7]) for r in rows}

    def cancel_waiting(self, task_id: str) -> bool:
        """Cancel a run no live worker holds (queued, or recovering); True if it was one. A run a
        live worker holds is asked to abort (procrastinate's ``abort_requested``: its worker sees
        it at its next heartbeat) and False is returned, so the caller signals that worker too."""
        with self.db.transaction() as tx:
            record = tx.run(q.RUN_JOB_FOR_UPDATE, {"task_id": task_id}).fetchone()
            # the job read after the record's lock, in a statement of its own: a claim that held the
            # lock has committed by then, and this read sees what it did (then holds the job still)
            row = tx.run(q.JOB_FOR_UPDATE, {"lease_seconds": self.lease_seconds,
                                            "job_id": record[0] if record is not None else None}).fetchone()
            if row is None or row[0] not in ("todo", "doing"):  # unknown, or ended (its record says how)
                return False
            job_id, job_status, alive = int(record[0]), row[0], bool(row[1])
            self._one(tx, "cancel_job", job_id=job_id, abort=job_status == "doing", delete_job=False)
            if job_status == "doing":
                if alive:
                    return False
                self._one(tx, "finish_job", job_id=job_id, status="aborted", delete_job=False)
            tx.run(q.CANCELLED, {"task_id": task_id})
            return True

    def depth(self) -> int:
        with self.db.transaction() as tx:
            return int(tx.run(q.DEPTH, {"task_name": TASK_NAME}).fetchone()[0])

    def running_by_user(self) -> dict[str, int]:
        """Runs a live worker holds, per user."""
        with self.db.transaction() as tx:
            rows = tx.run(q.RUNNING_BY_USER, {"lease_seconds": self.lease_seconds}).fetchall()
        return {str(u): int(n) for u, n in rows}

    # -- worker side ---------------------------------------------------------------------------

    def register_worker(self) -> int:
        """A new procrastinate worker id, whose heartbeat starts now."""
        with self.db.transaction() as tx:
            return int(self._one(tx, "register_worker")["worker_id"])

    def unregister_worker(self, worker_id: int) -> None:
        """The worker stops: its row goes (a run it still held is stalled at once, and taken over)."""
        with self.db.transaction() as tx:
            self._one(tx, "unregister_worker", worker_id=worker_id)

    def claim(self, worker_id: int, worker: str = "") -> Claim | None:
        """Take the next runnable run for procrastinate worker ``worker_id`` (named ``worker``), or
        None: of the users under their running limit, the one with the fewest running runs goes
        first, then the oldest waiting run; procrastinate's fetch takes that user's next job. A user
        another worker is taking a run of at this moment is tried last (as ``SKIP LOCKED`` skips a
        row): claimers wait for each other only when no other user has a run to take."""
        with self.db.transaction() as tx:
            candidates = tx.run(q.CANDIDATES, {"lease_seconds": self.lease_seconds, "task_name": TASK_NAME}).fetchall()
            busy: list[str] = []
            for queue, _, _ in candidates:
                if not tx.run(q.TRY_LOCK, {"key": "saber-run-user:" + queue}).fetchone()[0]:
                    busy.append(queue)  # another worker is taking this user's next run right now: another user's first
                    continue
                claim = self._take(tx, queue, worker_id, worker)
                if claim is not None:
                    return claim
            for queue in busy:  # nothing elsewhere: wait for that worker, then take this user's next run
                tx.run(q.LOCK, {"key": "saber-run-user:" + queue})
                claim = self._take(tx, queue, worker_id, worker)
                if claim is not None:
                    return claim
        return None

    def _take(self, tx: Tx, queue: str, worker_id: int, worker: str) -> Claim | None:
        """The next run of ``queue`` (one user's), under that user's lock, if the user is under the limit."""
        running = tx.run(q.RUNNING_IN_QUEUE, {"queue": queue, "lease_seconds": self.lease_seconds}).fetchone()[0]
        while running < self.max_running_per_user:
            job = self._one(tx, "fetch_job", queues=[queue], worker_id=worker_id)
            if job["id"] is None:
                return None
            row = tx.run(q.TAKE, {"worker": worker, "job_id": job["id"]}).fetchone()
            if row is not None:
                task_id, user_id, kind, request, attempts, enqueued_at, waited, trace = row
                return Claim(task_id=task_id, user_id=user_id, kind=kind, request=_json(request), attempts=int(attempts),
                             enqueued_at=float(enqueued_at), waited=float(waited), trace=trace, job_id=int(job["id"]))
            # a job with no open record (deferred by hand, or its record replaced): failed, and the next one taken
            log.error("queue job %s (%s) has no open run record; failing it", job["id"], job["args"])
            self._one(tx, "finish_job", job_id=job["id"], status="failed", delete_job=False)
        return None

    def heartbeat(self, worker_id: int, task_ids: list[str]) -> Beat:
        """Send the worker's heartbeat; returns which of ``task_ids`` it still holds (the others
        were taken over while it was stalled) and which were asked to abort. A worker whose row
        was pruned (stalled past the lease) registers again: it holds nothing any more."""
        with self.db.transaction() as tx:
            self._one(tx, "update_heartbeat", worker_id=worker_id)
            if tx.run(q.WORKER_EXISTS, {"worker_id": worker_id}).fetchone() is None:
                worker_id = int(self._one(tx, "register_worker")["worker_id"])
            rows = tx.run(q.WORKER_RUNS, {"worker_id": worker_id}).fetchall()
        asked = set(task_ids)
        return Beat(held={r[0] for r in rows if r[0] in asked}, abort={r[0] for r in rows if r[1] and r[0] in asked},
                    worker_id=worker_id, orphans={r[0] for r in rows if r[0] not in asked})

    def reap(self, worker_id: int) -> list[str]:
        """Put back the runs of stalled workers (no heartbeat for the lease: procrastinate's
        stalled jobs), so that a worker takes them over; a run asked to abort is cancelled
        instead. Not ``worker_id``'s own: it is alive, it is asking (its heartbeat is sent first).
        Returns the task ids."""
        with self.db.transaction() as tx:
            self._one(tx, "update_heartbeat", worker_id=worker_id)
            self._all(tx, "prune_stalled_workers", seconds_since_heartbeat=self.lease_seconds)
            stalled = self._all(tx, "select_stalled_jobs_by_heartbeat", queue=None, task_name=TASK_NAME,
                                seconds_since_heartbeat=self.lease_seconds)
            rows = tx.run(q.STALLED_RUNS, {"job_ids": [job["id"] for job in stalled]}).fetchall()
            taken: list[str] = []  # (not this worker's own jobs: its heartbeat was just sent, in this transaction)
            for job_id, task_id, abort in rows:  # only runs' jobs, and none another reaper holds
                if abort:
                    self._one(tx, "finish_job", job_id=job_id, status="aborted", delete_job=False)
                    tx.run(q.JOB_CANCELLED, {"job_id": job_id})
                else:
                    self._one(tx, "retry_job", job_id=job_id, retry_at=None, new_priority=None, new_queue_name=None,
                              new_lock=None)
                    tx.run(q.JOB_RECOVERING, {"job_id": job_id})
                taken.append(str(task_id))
        return taken

    def _held(self, tx: Tx, worker_id: int, task_id: str) -> tuple[int, Any, bool] | None:
        """(job id, request, abort requested) of ``task_id`` if ``worker_id`` holds its job, else None."""
        row = tx.run(q.HELD, {"task_id": task_id, "worker_id": worker_id}).fetchone()
        return (int(row[0]), row[1], bool(row[2])) if row is not None else None

    def finish(self, worker_id: int, task_id: str, status: str, *, error: str | None = None) -> bool:
        """``status``: done | cancelled | failed (``error``: why). False if the run was no longer
        ``worker_id``'s. The request kept in the record is redacted now that no worker needs its
        text (a secret in it is not kept)."""
        if status not in _JOB_END:
            raise ValueError(f"status: done, cancelled or failed, not {status!r}")
        with self.db.transaction() as tx:
            held = self._held(tx, worker_id, task_id)
            if held is None:
                return False
            job_id, request, _ = held
            self._one(tx, "finish_job", job_id=job_id, status=_JOB_END[status], delete_job=False)
            tx.run(q.FINISHED, {"outcome": status, "error": error, "request": json.dumps(redact_value(_json(request))),
                                "task_id": task_id})
            return True

    def fail(self, worker_id: int, task_id: str, reason: str) -> bool:
        """End a run that cannot run (a malformed request, or ``MAX_ATTEMPTS`` failures) with its
        reason, which the task's record shows; False if the run was no longer ``worker_id``'s."""
        return self.finish(worker_id, task_id, "failed", error=reason[:2000])

    def hand_back(self, worker_id: int, task_id: str) -> bool:
        """Put a run ``worker_id`` stops (it is shutting down) back in the queue for another
        worker (one asked to abort is cancelled instead)."""
        with self.db.transaction() as tx:
            held = self._held(tx, worker_id, task_id)
            if held is None:
                return False
            job_id, _, abort = held
            if abort:
                self._one(tx, "finish_job", job_id=job_id, status="aborted", delete_job=False)
                tx.run(q.HANDED_BACK_CANCELLED, {"task_id": task_id})
            else:
                self._one(tx, "retry_job", job_id=job_id, retry_at=None, new_priority=None, new_queue_name=None,
                          new_lock=None)
            return True

    def retry(self, worker_id: int, task_id: str, reason: str) -> str | None:
        """A run failed in ``worker_id`` (not an outage: a bug, a crash): try it again after
        ``RETRY``'s backoff, or, after ``MAX_ATTEMPTS`` takes, fail it with ``reason``. Returns
        "retry" or "failed", or None if the run was no longer ``worker_id``'s."""
        with self.db.transaction() as tx:
            held = self._held(tx, worker_id, task_id)
            if held is None:
                return None
            job_id, request, _ = held
            taken = tx.run(q.ATTEMPTS, {"task_id": task_id}).fetchone()[0]
            failed_before = pjobs.Job(queue="", lock=task_id, queueing_lock=task_id, task_name=TASK_NAME,
                                      attempts=int(taken) - 1)  # all a RetryStrategy reads of a job: its attempts
            decision = RETRY.get_retry_decision(exception=RuntimeError(reason), job=failed_before)
            if decision is None:
                self._one(tx, "finish_job", job_id=job_id, status="failed", delete_job=False)
                tx.run(q.FAILED, {"error": reason[:2000], "request": json.dumps(redact_value(_json(request))),
                                  "task_id": task_id})
                return "failed"
            self._one(tx, "retry_job", job_id=job_id, retry_at=decision.retry_at, new_priority=None, new_queue_name=None,
                      new_lock=None)
            return "retry"
