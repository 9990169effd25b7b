"""PostgreSQL checkpoint store: what several Saber processes share, on the process's pool for
this database (``saber.db``, psycopg 3); calls run in worker threads."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

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


class PostgresCheckpointStore(PooledCheckpointStore):
    """Connects on first use. Lease times are the database server's clock, the one clock every
    process sharing it agrees on."""

    def __init__(self, dsn: str, *, lease_seconds: float = DEFAULT_LEASE_SECONDS, pool_size: int | None = None) -> None:
        self.dsn = dsn
        self.lease_seconds = lease_seconds
        super().__init__(dsn, pool_size=pool_size)

    async def save_graph(
        self, task_id: str, nodes: Sequence[Node], *, config: Mapping[str, Any], status: TaskStatus,
        replans: int = 0, meta: Mapping[str, Any] | None = None, owner: str | None = None,
    ) -> None:
        await self._write(self._save_graph, task_id, list(nodes), dict(config), status, replans, dict(meta or {}), owner)

    def _save_graph(self, cur: Tx, task_id: str, nodes: list[Node], config: dict[str, Any], status: TaskStatus,
                    replans: int, meta: dict[str, Any], owner: str | None) -> None:
        if owner is not None:  # never take a task over from a live owner by rewriting it
            row = cur.run(q.LEASE, {"task_id": task_id}).fetchone()
            if row is not None and not claimable(row[0], row[1], row[3], owner):
                raise TaskClaimedError.running_elsewhere(task_id, row[1], row[2])
        cur.run(q.SAVE_TASK, {"task_id": task_id, "status": status, "config": json.dumps(config), "replans": replans,
                              "meta": meta_json(meta), "owner": owner, "lease_seconds": self.lease_seconds})
        cur.run(q.DELETE_NODES, {"task_id": task_id})
        cur.run_many(q.INSERT_NODE, [node_row(task_id, i, n) for i, n in enumerate(nodes)])

    async def save_nodes(
        self, task_id: str, nodes: Sequence[Node], *, replans: int | None = None, owner: str | None = None,
    ) -> None:
        await self._write(self._save_nodes, task_id, list(nodes), replans, owner)

    @staticmethod
    def _save_nodes(cur: Tx, task_id: str, nodes: list[Node], replans: int | None, owner: str | None) -> None:
        if owner is not None:  # FOR SHARE: a concurrent claim waits for this save; the heartbeat renews
            row = cur.run(q.OWNER, {"task_id": task_id}).fetchone()
            if row is None or row[0] != owner:
                raise TaskClaimedError.lost(task_id, owner)
        cur.run_many(q.SAVE_NODE, [state_row(task_id, n) for n in nodes])
        if replans is not None:
            cur.run(q.SET_REPLANS, {"replans": replans, "task_id": task_id})

    async def set_status(self, task_id: str, status: TaskStatus, *, owner: str | None = None) -> None:
        await self._write(self._set_status, task_id, status, owner)

    def _set_status(self, cur: Tx, task_id: str, status: TaskStatus, owner: str | None) -> None:
        if owner is not None:
            self._renew(cur, task_id, owner)
        cur.run(q.SET_STATUS, {"status": status, "task_id": task_id})

    async def claim(self, task_id: str, owner: str) -> None:
        await self._write(self._claim, task_id, owner)

    def _claim(self, cur: Tx, task_id: str, owner: str) -> None:
        row = cur.run(q.LEASE, {"task_id": task_id}).fetchone()  # FOR UPDATE: no other claim in between
        if row is None:
            raise LookupError(f"no checkpoint for task {task_id!r}")
        status, current, until, live = row
        if not claimable(status, current, live, owner):
            raise TaskClaimedError.running_elsewhere(task_id, current, until)
        cur.run(q.CLAIM, {"owner": owner, "lease_seconds": self.lease_seconds, "task_id": task_id})

    async def renew(self, task_id: str, owner: str) -> bool:
        try:
            await self._write(self._renew, task_id, owner)
        except TaskClaimedError:
            return False
        return True

    def _renew(self, cur: Tx, task_id: str, owner: str) -> None:
        result = cur.run(q.RENEW, {"lease_seconds": self.lease_seconds, "task_id": task_id, "owner": owner})
        if result.rowcount == 0:
            raise TaskClaimedError.lost(task_id, owner)

    async def load(self, task_id: str) -> Checkpoint | None:
        return await self._read(_load, task_id)

    async def list_tasks(self, *, status: TaskStatus | None = None) -> list[str]:
        return await self._read(_list_tasks, status)

    async def delete(self, task_id: str) -> None:
        await self._write(_delete, task_id)


def _load(cur: Tx, task_id: str) -> Checkpoint | None:
    row = cur.run(q.LOAD_TASK, {"task_id": task_id}).fetchone()
    if row is None:
        return None
    rows = cur.run(q.LOAD_NODES, {"task_id": task_id}).fetchall()
    return Checkpoint(task_id=task_id, status=row[0], config=dict(row[1]), replans=row[2], meta=dict(row[3]),
                      owner=row[4], lease_until=row[5], nodes=[node_from_row(*r) for r in rows])


def _list_tasks(cur: Tx, status: TaskStatus | None) -> list[str]:
    return [r[0] for r in cur.run(q.LIST_TASKS, {"status": status}).fetchall()]


def _delete(cur: Tx, task_id: str) -> None:
    cur.run(q.DELETE_TASK, {"task_id": task_id})
