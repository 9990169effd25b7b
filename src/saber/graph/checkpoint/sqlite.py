"""SQLite checkpoint store: the embedded default (the app's one file, WAL, a commit per batch of
nodes), on the pool ``saber.db`` keeps for that file; calls run in worker threads.

Durability: by default every checkpoint write commits with ``synchronous=FULL`` (the WAL is
fsynced before the commit returns), so a committed checkpoint survives power loss as well as a
killed process. ``synchronous="NORMAL"`` skips that fsync: a killed process loses nothing, a
power cut may lose the last commits (never corrupting the file).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from saber.db import Tx
from saber.graph.checkpoint import queries_sql as q
from saber.graph.checkpoint._pooled import PooledCheckpointStore, node_row, state_row
from saber.graph.checkpoint.base import (
    DEFAULT_LEASE_SECONDS,
    Checkpoint,
    TaskClaimedError,
    TaskStatus,
    claimable,
    meta_json,
    node_from_row,
)
from saber.graph.node import Node


class SQLiteCheckpointStore(PooledCheckpointStore):
    """Lease times are this host's wall clock: every process sharing the file runs on it."""

    def __init__(self, path: str | Path, *, synchronous: Literal["NORMAL", "FULL"] = "FULL",
                 lease_seconds: float = DEFAULT_LEASE_SECONDS, pool_size: int | None = None) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError(f"synchronous: must be 'NORMAL' or 'FULL', got {synchronous!r}")
        self.path = Path(path)
        self.lease_seconds = lease_seconds
        super().__init__(str(self.path), pool_size=pool_size, durable=synchronous == "FULL")

    async def save_graph(
        self, task_id: str, nodes: Sequence[Node], *, config: Mapping[str, Any], status: TaskStatus,
        replans: int = 0, meta: Mapping[str, Any] | None = None, owner: str | None = None,
    ) -> None:
        await self._write(self._save_graph, task_id, list(nodes), dict(config), status, replans, dict(meta or {}), owner)

    def _save_graph(self, db: Tx, task_id: str, nodes: list[Node], config: dict[str, Any], status: TaskStatus,
                    replans: int, meta: dict[str, Any], owner: str | None) -> None:
        now = time.time()
        lease = now + self.lease_seconds if owner is not None else None
        if owner is not None:  # never take a task over from a live owner by rewriting it
            row = db.run(q.LEASE, {"task_id": task_id}).fetchone()
            if row is not None and not claimable(row[0], row[1], row[2] is not None and row[2] > now, owner):
                raise TaskClaimedError.running_elsewhere(task_id, row[1], row[2])
        db.run(q.SAVE_TASK, {"task_id": task_id, "status": status, "config": json.dumps(config), "replans": replans,
                             "meta": meta_json(meta), "now": now, "owner": owner, "lease_until": lease})
        db.run(q.DELETE_NODES, {"task_id": task_id})
        db.run_many(q.INSERT_NODE, [node_row(task_id, i, n) for i, n in enumerate(nodes)])

    async def save_nodes(
        self, task_id: str, nodes: Sequence[Node], *, replans: int | None = None, owner: str | None = None,
    ) -> None:
        await self._write(self._save_nodes, task_id, list(nodes), replans, owner)

    def _save_nodes(self, db: Tx, task_id: str, nodes: list[Node], replans: int | None, owner: str | None) -> None:
        if owner is not None:  # a read, not a write: the heartbeat renews the lease
            _check_owner(db, task_id, owner)
        db.run_many(q.SAVE_NODE, [state_row(task_id, n) for n in nodes])
        if replans is not None:
            db.run(q.SET_REPLANS, {"replans": replans, "task_id": task_id})

    async def set_status(self, task_id: str, status: TaskStatus, *, owner: str | None = None) -> None:
        await self._write(self._set_status, task_id, status, owner)

    def _set_status(self, db: Tx, task_id: str, status: TaskStatus, owner: str | None) -> None:
        if owner is not None:
            self._renew(db, task_id, owner)
        db.run(q.SET_STATUS, {"status": status, "now": time.time(), "task_id": task_id})

    async def claim(self, task_id: str, owner: str) -> None:
        await self._write(self._claim, task_id, owner)

    def _claim(self, db: Tx, task_id: str, owner: str) -> None:
        # a write transaction (BEGIN IMMEDIATE): no other writer between the check and the update
        row = db.run(q.LEASE, {"task_id": task_id}).fetchone()
        if row is None:
            raise LookupError(f"no checkpoint for task {task_id!r}")
        status, current, until = row
        now = time.time()
        if not claimable(status, current, until is not None and until > now, owner):
            raise TaskClaimedError.running_elsewhere(task_id, current, until)
        db.run(q.CLAIM, {"owner": owner, "lease_until": now + self.lease_seconds, "task_id": task_id})

    async def renew(self, task_id: str, owner: str) -> bool:
        try:
            await self._write(self._renew, task_id, owner)
        except TaskClaimedError:
            return False
        return True

    def _renew(self, db: Tx, task_id: str, owner: str) -> None:
        cur = db.run(q.RENEW, {"lease_until": time.time() + self.lease_seconds, "task_id": task_id, "owner": owner})
        if cur.rowcount == 0:
            raise TaskClaimedError.lost(task_id, owner)

    async def load(self, task_id: str) -> Checkpoint | None:
        return await self._read(_load, task_id)

    async def list_tasks(self, *, status: TaskStatus | None = None) -> list[str]:
        return await self._read(_list_tasks, status)

    async def delete(self, task_id: str) -> None:
        await self._write(_delete, task_id)


def _check_owner(db: Tx, task_id: str, owner: str) -> None:
    row = db.run(q.OWNER, {"task_id": task_id}).fetchone()
    if row is None or row[0] != owner:
        raise TaskClaimedError.lost(task_id, owner)


def _load(db: Tx, task_id: str) -> Checkpoint | None:
    row = db.run(q.LOAD_TASK, {"task_id": task_id}).fetchone()
    if row is None:
        return None
    rows = db.run(q.LOAD_NODES, {"task_id": task_id}).fetchall()
    return Checkpoint(task_id=task_id, status=row[0], config=json.loads(row[1]), replans=row[2],
                      meta=json.loads(row[3]), owner=row[4], lease_until=row[5],
                      nodes=[node_from_row(*r) for r in rows])


def _list_tasks(db: Tx, status: TaskStatus | None) -> list[str]:
    return [r[0] for r in db.run(q.LIST_TASKS, {"status": status}).fetchall()]


def _delete(db: Tx, task_id: str) -> None:
    db.run(q.DELETE_TASK, {"task_id": task_id})
