"""PostgreSQL checkpoint store (psycopg 3, async): what several Saber processes share."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg

from saber.graph.checkpoint.base import (
    Checkpoint,
    CheckpointStore,
    TaskStatus,
    node_from_row,
    node_spec,
    node_state,
)
from saber.graph.node import Node

_SCHEMA = """
CREATE TABLE IF NOT EXISTS checkpoint_tasks (
    task_id TEXT PRIMARY KEY, status TEXT NOT NULL, config JSONB NOT NULL, replans INTEGER NOT NULL,
    meta JSONB NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS checkpoint_nodes (
    task_id TEXT NOT NULL REFERENCES checkpoint_tasks(task_id) ON DELETE CASCADE,
    node_id TEXT NOT NULL, position INTEGER NOT NULL, spec TEXT NOT NULL, status TEXT NOT NULL,
    result TEXT NOT NULL, error TEXT, attempts INTEGER NOT NULL, duration_ms DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (task_id, node_id)
);
"""


class PostgresCheckpointStore(CheckpointStore):
    """Connects lazily on first use; one connection, writes serialised by a lock."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._lock = asyncio.Lock()

    async def _connection(self) -> psycopg.AsyncConnection[Any]:
        if self._conn is None or self._conn.closed:
            conn = await psycopg.AsyncConnection.connect(self.dsn, autocommit=False)
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(hashtext('saber_checkpoint_schema'))")
                await conn.execute(_SCHEMA)
            self._conn = conn
        return self._conn

    async def save_graph(
        self, task_id: str, nodes: Sequence[Node], *, config: Mapping[str, Any], status: TaskStatus,
        replans: int = 0, meta: Mapping[str, Any] | None = None,
    ) -> None:
        async with self._lock:
            conn = await self._connection()
            async with conn.transaction(), conn.cursor() as cur:
                await cur.execute(
                    "INSERT INTO checkpoint_tasks (task_id, status, config, replans, meta) VALUES (%s, %s, %s, %s, %s) "
                    "ON CONFLICT (task_id) DO UPDATE SET status=excluded.status, config=excluded.config, "
                    "replans=excluded.replans, meta=excluded.meta, updated_at=now()",
                    (task_id, status, json.dumps(dict(config)), replans, json.dumps(dict(meta or {}), default=str)),
                )
                await cur.execute("DELETE FROM checkpoint_nodes WHERE task_id=%s", (task_id,))
                await cur.executemany(
                    "INSERT INTO checkpoint_nodes VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    [(task_id, n.id, i, node_spec(n), *node_state(n)) for i, n in enumerate(nodes)],
                )

    async def save_nodes(self, task_id: str, nodes: Sequence[Node], *, replans: int | None = None) -> None:
        async with self._lock:
            conn = await self._connection()
            async with conn.transaction(), conn.cursor() as cur:
                await cur.executemany(
                    "UPDATE checkpoint_nodes SET status=%s, result=%s, error=%s, attempts=%s, duration_ms=%s "
                    "WHERE task_id=%s AND node_id=%s",
                    [(*node_state(n), task_id, n.id) for n in nodes],
                )
                if replans is not None:
                    await cur.execute("UPDATE checkpoint_tasks SET replans=%s WHERE task_id=%s", (replans, task_id))

    async def set_status(self, task_id: str, status: TaskStatus) -> None:
        async with self._lock:
            conn = await self._connection()
            async with conn.transaction():
                await conn.execute(
                    "UPDATE checkpoint_tasks SET status=%s, updated_at=now() WHERE task_id=%s", (status, task_id)
                )

    async def load(self, task_id: str) -> Checkpoint | None:
        async with self._lock:
            conn = await self._connection()
            async with conn.transaction(), conn.cursor() as cur:
                await cur.execute(
                    "SELECT status, config, replans, meta FROM checkpoint_tasks WHERE task_id=%s", (task_id,)
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
                          nodes=[node_from_row(*r) for r in rows])

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
