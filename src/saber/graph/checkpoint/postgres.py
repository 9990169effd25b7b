"""PostgreSQL checkpoint store (psycopg 3, async): what several Saber processes share."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg

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
    task_id TEXT PRIMARY KEY, status TEXT NOT NULL, config JSONB NOT NULL, replans INTEGER NOT NULL,
    meta JSONB NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(), owner TEXT, lease_until TIMESTAMPTZ
);
CREATE TABLE IF NOT EXISTS checkpoint_nodes (
    task_id TEXT NOT NULL REFERENCES checkpoint_tasks(task_id) ON DELETE CASCADE,
    node_id TEXT NOT NULL, position INTEGER NOT NULL, spec TEXT NOT NULL, status TEXT NOT NULL,
    result TEXT NOT NULL, error TEXT, attempts INTEGER NOT NULL, duration_ms DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (task_id, node_id)
);
"""
_LEASE_COLUMNS = """
ALTER TABLE checkpoint_tasks ADD COLUMN IF NOT EXISTS owner TEXT;
ALTER TABLE checkpoint_tasks ADD COLUMN IF NOT EXISTS lease_until TIMESTAMPTZ;
"""


class PostgresCheckpointStore(CheckpointStore):
    """Connects lazily on first use; one connection, writes serialised by a lock. Lease times
    are the database server's clock, the one clock every process sharing it agrees on."""

    def __init__(self, dsn: str, *, lease_seconds: float = DEFAULT_LEASE_SECONDS) -> None:
        self.dsn = dsn
        self.lease_seconds = lease_seconds
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._lock = asyncio.Lock()

    async def _connection(self) -> psycopg.AsyncConnection[Any]:
        if self._conn is None or self._conn.closed:
            conn = await psycopg.AsyncConnection.connect(self.dsn, autocommit=False)
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(hashtext('saber_checkpoint_schema'))")
                await conn.execute(_SCHEMA)
                cur = await conn.execute("SELECT 1 FROM information_schema.columns WHERE table_schema = "
                                         "current_schema() AND table_name='checkpoint_tasks' AND column_name='lease_until'")
                if await cur.fetchone() is None:  # a database from before leases
                    await conn.execute(_LEASE_COLUMNS)
            self._conn = conn
        return self._conn

    async def save_graph(
        self, task_id: str, nodes: Sequence[Node], *, config: Mapping[str, Any], status: TaskStatus,
        replans: int = 0, meta: Mapping[str, Any] | None = None, owner: str | None = None,
    ) -> None:
        async with self._lock:
            conn = await self._connection()
            async with conn.transaction(), conn.cursor() as cur:
                if owner is not None:  # never take a task over from a live owner by rewriting it
                    await cur.execute(
                        "SELECT status, owner, extract(epoch FROM lease_until)::float8, "
                        "coalesce(lease_until > now(), false) FROM checkpoint_tasks WHERE task_id=%s FOR UPDATE",
                        (task_id,),
                    )
                    row = await cur.fetchone()
                    if row is not None and not claimable(row[0], row[1], row[3], owner):
                        raise TaskClaimedError.running_elsewhere(task_id, row[1], row[2])
                await cur.execute(
                    "INSERT INTO checkpoint_tasks (task_id, status, config, replans, meta, owner, lease_until) "
                    "VALUES (%s, %s, %s, %s, %s, %s, CASE WHEN %s::text IS NULL THEN NULL "
                    "ELSE now() + make_interval(secs => %s) END) "
                    "ON CONFLICT (task_id) DO UPDATE SET status=excluded.status, config=excluded.config, "
                    "replans=excluded.replans, meta=excluded.meta, updated_at=now(), owner=excluded.owner, "
                    "lease_until=excluded.lease_until",
                    (task_id, status, json.dumps(dict(config)), replans, json.dumps(dict(meta or {}), default=str),
                     owner, owner, self.lease_seconds),
                )
                await cur.execute("DELETE FROM checkpoint_nodes WHERE task_id=%s", (task_id,))
                await cur.executemany(
                    "INSERT INTO checkpoint_nodes VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    [(task_id, n.id, i, node_spec(n), *node_state(n)) for i, n in enumerate(nodes)],
                )

    async def save_nodes(
        self, task_id: str, nodes: Sequence[Node], *, replans: int | None = None, owner: str | None = None,
    ) -> None:
        async with self._lock:
            conn = await self._connection()
            async with conn.transaction(), conn.cursor() as cur:
                if owner is not None:  # FOR SHARE: a concurrent claim waits for this save; the heartbeat renews
                    await cur.execute("SELECT owner FROM checkpoint_tasks WHERE task_id=%s FOR SHARE", (task_id,))
                    row = await cur.fetchone()
                    if row is None or row[0] != owner:
                        raise TaskClaimedError.lost(task_id, owner)
                await cur.executemany(
                    "UPDATE checkpoint_nodes SET status=%s, result=%s, error=%s, attempts=%s, duration_ms=%s "
                    "WHERE task_id=%s AND node_id=%s",
                    [(*node_state(n), task_id, n.id) for n in nodes],
                )
                if replans is not None:
                    await cur.execute("UPDATE checkpoint_tasks SET replans=%s WHERE task_id=%s", (replans, task_id))

    async def set_status(self, task_id: str, status: TaskStatus, *, owner: str | None = None) -> None:
        async with self._lock:
            conn = await self._connection()
            async with conn.transaction(), conn.cursor() as cur:
                if owner is not None:
                    await self._renew(cur, task_id, owner)
                await cur.execute(
                    "UPDATE checkpoint_tasks SET status=%s, updated_at=now(), "
                    "lease_until=CASE WHEN %s = 'running' THEN lease_until END WHERE task_id=%s",
                    (status, status, task_id),
                )

    async def claim(self, task_id: str, owner: str) -> None:
        async with self._lock:
            conn = await self._connection()
            async with conn.transaction(), conn.cursor() as cur:
                await cur.execute(  # FOR UPDATE: no other claim between the check and the update
                    "SELECT status, owner, extract(epoch FROM lease_until)::float8, "
                    "coalesce(lease_until > now(), false) FROM checkpoint_tasks WHERE task_id=%s FOR UPDATE",
                    (task_id,),
                )
                row = await cur.fetchone()
                if row is None:
                    raise LookupError(f"no checkpoint for task {task_id!r}")
                status, current, until, live = row
                if not claimable(status, current, live, owner):
                    raise TaskClaimedError.running_elsewhere(task_id, current, until)
                await cur.execute(
                    "UPDATE checkpoint_tasks SET owner=%s, lease_until=now() + make_interval(secs => %s) "
                    "WHERE task_id=%s", (owner, self.lease_seconds, task_id),
                )

    async def renew(self, task_id: str, owner: str) -> bool:
        async with self._lock:
            conn = await self._connection()
            async with conn.transaction(), conn.cursor() as cur:
                try:
                    await self._renew(cur, task_id, owner)
                except TaskClaimedError:
                    return False
        return True

    async def _renew(self, cur: psycopg.AsyncCursor[Any], task_id: str, owner: str) -> None:
        await cur.execute(
            "UPDATE checkpoint_tasks SET lease_until=now() + make_interval(secs => %s) WHERE task_id=%s AND owner=%s",
            (self.lease_seconds, task_id, owner),
        )
        if cur.rowcount == 0:
            raise TaskClaimedError.lost(task_id, owner)

    async def load(self, task_id: str) -> Checkpoint | None:
        async with self._lock:
            conn = await self._connection()
            async with conn.transaction(), conn.cursor() as cur:
                await cur.execute(
                    "SELECT status, config, replans, meta, owner, extract(epoch FROM lease_until)::float8 "
                    "FROM checkpoint_tasks WHERE task_id=%s", (task_id,),
                )
                row = await cur.fetchone()
                if row is None:
                    return None
                await cur.execute(
                    "SELECT node_id, spec, status, result, error, attempts, duration_ms FROM checkpoint_nodes "
                    "WHERE task_id=%s ORDER BY position", (task_id,),
                )
                rows = await cur.fetchall()
        return Checkpoint(task_id=task_id, status=row[0], config=dict(row[1]), replans=row[2], meta=dict(row[3]),
                          owner=row[4], lease_until=row[5], nodes=[node_from_row(*r) for r in rows])

    async def list_tasks(self, *, status: TaskStatus | None = None) -> list[str]:
        async with self._lock:
            conn = await self._connection()
            async with conn.transaction(), conn.cursor() as cur:
                if status is None:
                    await cur.execute("SELECT task_id FROM checkpoint_tasks ORDER BY created_at")
                else:
                    await cur.execute(
                        "SELECT task_id FROM checkpoint_tasks WHERE status=%s ORDER BY created_at", (status,)
                    )
                return [r[0] for r in await cur.fetchall()]

    async def delete(self, task_id: str) -> None:
        async with self._lock:
            conn = await self._connection()
            async with conn.transaction():
                await conn.execute("DELETE FROM checkpoint_tasks WHERE task_id=%s", (task_id,))

    async def close(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None
