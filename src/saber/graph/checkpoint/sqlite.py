"""SQLite checkpoint store: the embedded default (one file, WAL, a commit per batch of nodes).

Writes run inline on the event loop: a WAL commit with ``synchronous=NORMAL`` takes tens of
microseconds, far less than a hop to a worker thread. NORMAL survives the process being killed
(the commit is in the OS's hands when it returns); pass ``synchronous="FULL"`` to also survive
power loss, at the price of an fsync per commit.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from saber.graph.checkpoint.base import (
    DEFAULT_LEASE_SECONDS,
    Checkpoint,
    CheckpointStore,
    TaskClaimedError,
    TaskStatus,
    claimable,
    node_from_row,
    node_spec,
    node_state,
)
from saber.graph.node import Node

_SCHEMA = """
CREATE TABLE IF NOT EXISTS checkpoint_tasks (
    task_id TEXT PRIMARY KEY, status TEXT NOT NULL, config TEXT NOT NULL, replans INTEGER NOT NULL,
    meta TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL,
    owner TEXT, lease_until REAL
);
CREATE TABLE IF NOT EXISTS checkpoint_nodes (
    task_id TEXT NOT NULL REFERENCES checkpoint_tasks(task_id) ON DELETE CASCADE,
    node_id TEXT NOT NULL, position INTEGER NOT NULL, spec TEXT NOT NULL, status TEXT NOT NULL,
    result TEXT NOT NULL, error TEXT, attempts INTEGER NOT NULL, duration_ms REAL NOT NULL,
    PRIMARY KEY (task_id, node_id)
);
"""


class SQLiteCheckpointStore(CheckpointStore):
    """Lease times are this host's wall clock: every process sharing the file runs on it."""

    def __init__(self, path: str | Path, *, synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
                 lease_seconds: float = DEFAULT_LEASE_SECONDS) -> None:
        self.path = Path(path)
        self.lease_seconds = lease_seconds
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(f"PRAGMA synchronous={synchronous}")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.executescript(_SCHEMA)
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(checkpoint_tasks)")}
        for column, kind in (("owner", "TEXT"), ("lease_until", "REAL")):  # a file from before leases
            if column not in columns:
                self._db.execute(f"ALTER TABLE checkpoint_tasks ADD COLUMN {column} {kind}")

    def _tx(self) -> _Tx:
        return _Tx(self._db)

    async def save_graph(
        self, task_id: str, nodes: Sequence[Node], *, config: Mapping[str, Any], status: TaskStatus,
        replans: int = 0, meta: Mapping[str, Any] | None = None, owner: str | None = None,
    ) -> None:
        now = time.time()
        lease = now + self.lease_seconds if owner is not None else None
        with self._tx() as db:
            if owner is not None:  # never take a task over from a live owner by rewriting it
                row = db.execute("SELECT status, owner, lease_until FROM checkpoint_tasks WHERE task_id=?",
                                 (task_id,)).fetchone()
                if row is not None and not claimable(row[0], row[1], row[2] is not None and row[2] > now, owner):
                    raise TaskClaimedError.running_elsewhere(task_id, row[1], row[2])
            db.execute(
                "INSERT INTO checkpoint_tasks (task_id, status, config, replans, meta, created_at, updated_at, owner, "
                "lease_until) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(task_id) DO UPDATE SET "
                "status=excluded.status, config=excluded.config, replans=excluded.replans, meta=excluded.meta, "
                "updated_at=excluded.updated_at, owner=excluded.owner, lease_until=excluded.lease_until",
                (task_id, status, json.dumps(dict(config)), replans, json.dumps(dict(meta or {}), default=str), now, now,
                 owner, lease),
            )
            db.execute("DELETE FROM checkpoint_nodes WHERE task_id = ?", (task_id,))
            db.executemany(
                "INSERT INTO checkpoint_nodes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(task_id, n.id, i, node_spec(n), *node_state(n)) for i, n in enumerate(nodes)],
            )

    async def save_nodes(
        self, task_id: str, nodes: Sequence[Node], *, replans: int | None = None, owner: str | None = None,
    ) -> None:
        with self._tx() as db:
            if owner is not None:  # a read, not a write: the heartbeat renews the lease
                self._check_owner(db, task_id, owner)
            db.executemany(
                "UPDATE checkpoint_nodes SET status=?, result=?, error=?, attempts=?, duration_ms=? "
                "WHERE task_id=? AND node_id=?",
                [(*node_state(n), task_id, n.id) for n in nodes],
            )
            if replans is not None:
                db.execute("UPDATE checkpoint_tasks SET replans=? WHERE task_id=?", (replans, task_id))

    async def set_status(self, task_id: str, status: TaskStatus, *, owner: str | None = None) -> None:
        with self._tx() as db:
            if owner is not None:
                self._renew(db, task_id, owner)
            lease = "lease_until" if status == "running" else "NULL"
            db.execute(f"UPDATE checkpoint_tasks SET status=?, updated_at=?, lease_until={lease} WHERE task_id=?",
                       (status, time.time(), task_id))

    async def claim(self, task_id: str, owner: str) -> None:
        with self._tx() as db:  # BEGIN IMMEDIATE: no other writer between the check and the update
            row = db.execute("SELECT status, owner, lease_until FROM checkpoint_tasks WHERE task_id=?",
                             (task_id,)).fetchone()
            if row is None:
                raise LookupError(f"no checkpoint for task {task_id!r}")
            status, current, until = row
            now = time.time()
            if not claimable(status, current, until is not None and until > now, owner):
                raise TaskClaimedError.running_elsewhere(task_id, current, until)
            db.execute("UPDATE checkpoint_tasks SET owner=?, lease_until=? WHERE task_id=?",
                       (owner, now + self.lease_seconds, task_id))

    async def renew(self, task_id: str, owner: str) -> bool:
        with self._tx() as db:
            try:
                self._renew(db, task_id, owner)
            except TaskClaimedError:
                return False
        return True

    @staticmethod
    def _check_owner(db: sqlite3.Connection, task_id: str, owner: str) -> None:
        row = db.execute("SELECT owner FROM checkpoint_tasks WHERE task_id=?", (task_id,)).fetchone()
        if row is None or row[0] != owner:
            raise TaskClaimedError.lost(task_id, owner)

    def _renew(self, db: sqlite3.Connection, task_id: str, owner: str) -> None:
        cur = db.execute("UPDATE checkpoint_tasks SET lease_until=? WHERE task_id=? AND owner=?",
                         (time.time() + self.lease_seconds, task_id, owner))
        if cur.rowcount == 0:
            raise TaskClaimedError.lost(task_id, owner)

    async def load(self, task_id: str) -> Checkpoint | None:
        row = self._db.execute(
            "SELECT status, config, replans, meta, owner, lease_until FROM checkpoint_tasks WHERE task_id=?", (task_id,)
        ).fetchone()
        if row is None:
            return None
        rows = self._db.execute(
            "SELECT node_id, spec, status, result, error, attempts, duration_ms FROM checkpoint_nodes "
            "WHERE task_id=? ORDER BY position", (task_id,),
        ).fetchall()
        return Checkpoint(task_id=task_id, status=row[0], config=json.loads(row[1]), replans=row[2],
                          meta=json.loads(row[3]), owner=row[4], lease_until=row[5],
                          nodes=[node_from_row(*r) for r in rows])

    async def list_tasks(self, *, status: TaskStatus | None = None) -> list[str]:
        if status is None:
            rows = self._db.execute("SELECT task_id FROM checkpoint_tasks ORDER BY created_at").fetchall()
        else:
            rows = self._db.execute(
                "SELECT task_id FROM checkpoint_tasks WHERE status=? ORDER BY created_at", (status,)
            ).fetchall()
        return [r[0] for r in rows]

    async def delete(self, task_id: str) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM checkpoint_tasks WHERE task_id=?", (task_id,))

    async def close(self) -> None:
        self._db.close()


class _Tx:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on error."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self.db.execute("ROLLBACK" if exc_type is not None else "COMMIT")
