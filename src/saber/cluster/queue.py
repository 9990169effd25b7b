"""``RunQueue``: the durable run queue of the distributed mode, a PostgreSQL table (migration 0004).

A request accepted by an API node is a row before the node answers, so it survives every
worker being down. Workers take rows with ``FOR UPDATE SKIP LOCKED`` (no two take the same row,
none waits for another) and hold them with a lease they renew; a row whose lease ran out (its
worker died) is taken again like a queued one. Fairness: among the runnable rows, the user with
the fewest running tasks goes first, then the oldest request. The per-user limit is checked
under a transaction-scoped advisory lock on the user, so two workers claiming at the same time
cannot both take that user's last slot. Nothing here is home-made locking: row locks and
advisory locks are PostgreSQL's.

Every method blocks (it is a database call): the async callers run them with ``asyncio.to_thread``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from saber.db.database import Database
from saber.redact import redact_value
from saber.runs.request import RunRequest

_NOW = "EXTRACT(EPOCH FROM clock_timestamp())"
"""The database's clock: every lease is measured on one clock, whatever the machines' clocks say."""

_LIVE = f"status = 'running' AND lease_until >= {_NOW}"

_STATUS = f"CASE WHEN status = 'running' AND lease_until < {_NOW} THEN 'recovering' ELSE status END"
"""A row's status as the API says it: a run whose worker stopped renewing its lease is ``recovering``."""

MAX_ATTEMPTS = 5
"""Times a run is taken before a failure that is not an outage (a bug, a crash of its worker each
time) fails it for good, with its reason: a run that cannot work is not retried forever."""


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


def _json(text: Any) -> Any:
    """A stored request: its JSON, or the text itself when it is not JSON (the worker fails that run)."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _check_reuse(task_id: str, status: str, kind: str) -> None:
    """Raise ``DuplicateTask`` unless a run of ``kind`` may take the id of a task that is ``status``."""
    if status in ("queued", "running"):
        raise DuplicateTask(f"task {task_id!r} is already {status}")
    if kind != "resume":
        raise DuplicateTask(f"task id {task_id!r} already exists: choose a new one (or resume that task)")


class RunQueue:
    def __init__(self, db: Database, *, lease_seconds: float, max_running_per_user: int,
                 max_waiting_per_user: int = 1000) -> None:
        if db.dialect != "postgresql":
            raise ValueError("the run queue needs PostgreSQL (database.url): the SQLite default runs requests in-process")
        self.db = db
        self.lease_seconds = lease_seconds
        self.max_running_per_user = max_running_per_user
        self.max_waiting_per_user = max_waiting_per_user

    # -- API side ------------------------------------------------------------------------------

    def enqueue(self, *, task_id: str, user_id: str, kind: str, request: RunRequest, trace: str = "") -> float:
        """Add a run; returns its enqueue time. A task id that is queued or running raises
        ``DuplicateTask``; a finished one is queued again (``kind`` resume)."""
        with self.db.transaction() as tx:
            tx.execute("SELECT pg_advisory_xact_lock(hashtext(?))", ("saber-run-user:" + user_id,))
            row = tx.execute("SELECT status FROM saber_run_queue WHERE task_id = ? FOR UPDATE", (task_id,)).fetchone()
            if row is not None:
                _check_reuse(task_id, str(row[0]), kind)
            waiting = tx.execute("SELECT count(*) FROM saber_run_queue WHERE user_id = ? AND status IN ('queued', 'running')",
                                 (user_id,)).fetchone()[0]
            if waiting >= self.max_waiting_per_user:
                raise QueueFull(f"user {user_id!r} already has {waiting} request(s) queued or running")
            now = tx.execute(f"SELECT {_NOW}").fetchone()[0]
            tx.execute("DELETE FROM saber_run_queue WHERE task_id = ? AND status NOT IN ('queued', 'running')", (task_id,))
            added = tx.execute(
                "INSERT INTO saber_run_queue (task_id, user_id, kind, request, status, enqueued_at, attempts, trace) "
                "VALUES (?, ?, ?, ?, 'queued', ?, 0, ?) ON CONFLICT (task_id) DO NOTHING RETURNING task_id",
                (task_id, user_id, kind, request.stored(), now, trace)).fetchone()
            if added is None:  # a request with this id was queued meanwhile (another user's: under another lock)
                row = tx.execute("SELECT status FROM saber_run_queue WHERE task_id = ?", (task_id,)).fetchone()
                _check_reuse(task_id, str(row[0]) if row is not None else "queued", kind)
                raise DuplicateTask(f"task {task_id!r} was queued by another request meanwhile")
        return float(now)

    def get(self, task_id: str) -> dict[str, Any] | None:
        """The row of ``task_id``; its ``status`` as ``statuses`` says it (``recovering`` included)."""
        with self.db.transaction() as tx:
            row = tx.execute(f"SELECT task_id, user_id, kind, request, {_STATUS}, enqueued_at, worker, attempts, error "
                             "FROM saber_run_queue WHERE task_id = ?", (task_id,)).fetchone()
        if row is None:
            return None
        keys = ("task_id", "user_id", "kind", "request", "status", "enqueued_at", "worker", "attempts", "error")
        out = dict(zip(keys, row, strict=True))
        out["request"] = _json(out["request"])
        return out

    def statuses(self, task_ids: list[str]) -> dict[str, str]:
        """The status of each of ``task_ids`` the queue holds: queued, running (a live worker holds
        it), recovering (its worker is gone: the lease ran out, another worker takes it next),
        done, cancelled or failed."""
        return {t: r[0] for t, r in self.records(task_ids).items()}

    def records(self, task_ids: list[str]) -> dict[str, tuple[str, str | None]]:
        """(status as ``statuses`` says it, the reason a failed run failed) of each of ``task_ids``."""
        if not task_ids:
            return {}
        with self.db.transaction() as tx:
            rows = tx.execute(f"SELECT task_id, {_STATUS}, error FROM saber_run_queue WHERE task_id = ANY(?)",
                              (task_ids,)).fetchall()
        return {str(t): (str(s), e) for t, s, e in rows}

    def cancel_waiting(self, task_id: str) -> bool:
        """Mark a run no worker holds cancelled (queued, or running under an expired lease); True
        if it was one. A run a live worker holds is cancelled through that worker instead."""
        with self.db.transaction() as tx:
            done = tx.execute(f"UPDATE saber_run_queue SET status = 'cancelled', finished_at = {_NOW}, worker = NULL "
                              f"WHERE task_id = ? AND (status = 'queued' OR (status = 'running' AND lease_until < {_NOW}))",
                              (task_id,))
            return done.rowcount > 0

    def depth(self) -> int:
        with self.db.transaction() as tx:
            return int(tx.execute("SELECT count(*) FROM saber_run_queue WHERE status = 'queued'").fetchone()[0])

    def running_by_user(self) -> dict[str, int]:
        with self.db.transaction() as tx:
            rows = tx.execute(f"SELECT user_id, count(*) FROM saber_run_queue WHERE {_LIVE} GROUP BY user_id").fetchall()
        return {str(u): int(n) for u, n in rows}

    # -- worker side ---------------------------------------------------------------------------

    def claim(self, worker: str) -> Claim | None:
        """Take the next runnable run for ``worker``, or None. A run whose lease ran out is taken
        only by another worker: ``worker`` itself may still be running it (and will notice)."""
        with self.db.transaction() as tx:
            candidates = tx.execute(
                f"SELECT q.task_id, q.user_id FROM saber_run_queue q "
                f"WHERE q.status = 'queued' OR (q.status = 'running' AND q.lease_until < {_NOW} AND q.worker <> ?) "
                f"ORDER BY (SELECT count(*) FROM saber_run_queue r WHERE r.user_id = q.user_id AND r.{_LIVE}), q.enqueued_at "
                f"LIMIT 16 FOR UPDATE OF q SKIP LOCKED", (worker,)).fetchall()
            checked: set[str] = set()
            for task_id, user_id in candidates:
                if user_id in checked:
                    continue
                checked.add(user_id)
                tx.execute("SELECT pg_advisory_xact_lock(hashtext(?))", ("saber-run-user:" + user_id,))
                running = tx.execute(f"SELECT count(*) FROM saber_run_queue WHERE user_id = ? AND task_id <> ? AND {_LIVE}",
                                     (user_id, task_id)).fetchone()[0]
                if running >= self.max_running_per_user:
                    continue
                row = tx.execute(
                    f"UPDATE saber_run_queue SET status = 'running', worker = ?, attempts = attempts + 1, "
                    f"started_at = {_NOW}, lease_until = {_NOW} + ? WHERE task_id = ? "
                    f"RETURNING kind, request, attempts, enqueued_at, {_NOW} - enqueued_at, trace",
                    (worker, self.lease_seconds, task_id)).fetchone()
                kind, request, attempts, enqueued_at, waited, trace = row
                return Claim(task_id=task_id, user_id=user_id, kind=kind, request=_json(request),
                             attempts=int(attempts), enqueued_at=float(enqueued_at), waited=float(waited), trace=trace)
        return None

    def renew(self, worker: str, task_ids: list[str]) -> set[str]:
        """Extend ``worker``'s leases; returns the ids it still holds (the others were taken over)."""
        if not task_ids:
            return set()
        with self.db.transaction() as tx:
            rows = tx.execute(f"UPDATE saber_run_queue SET lease_until = {_NOW} + ? "
                              "WHERE worker = ? AND status = 'running' AND task_id = ANY(?) RETURNING task_id",
                              (self.lease_seconds, worker, task_ids)).fetchall()
        return {r[0] for r in rows}

    def finish(self, worker: str, task_id: str, status: str, *, error: str | None = None) -> bool:
        """``status``: done | cancelled | failed (``error``: why). False if the run was no longer
        ``worker``'s. The request kept in the row is redacted now that no worker needs its text (a
        secret in it is not kept)."""
        with self.db.transaction() as tx:
            row = tx.execute("SELECT request FROM saber_run_queue WHERE task_id = ? AND worker = ? AND status = 'running' "
                             "FOR UPDATE", (task_id, worker)).fetchone()
            if row is None:
                return False
            request = redact_value(_json(row[0]))
            tx.execute(f"UPDATE saber_run_queue SET status = ?, finished_at = {_NOW}, lease_until = NULL, request = ?, "
                       "error = ? WHERE task_id = ?", (status, json.dumps(request), error, task_id))
            return True

    def fail(self, worker: str, task_id: str, reason: str) -> bool:
        """End a run that cannot run (a malformed request, or ``MAX_ATTEMPTS`` failures) with its
        reason, which the task's record shows; False if the run was no longer ``worker``'s."""
        return self.finish(worker, task_id, "failed", error=reason[:2000])

    def hand_back(self, worker: str, task_id: str) -> bool:
        """Put a run ``worker`` stops (it is shutting down) back in the queue for another worker."""
        with self.db.transaction() as tx:
            done = tx.execute("UPDATE saber_run_queue SET status = 'queued', worker = NULL, lease_until = NULL "
                              "WHERE task_id = ? AND worker = ? AND status = 'running'", (task_id, worker))
            return done.rowcount > 0
