"""What the SQL checkpoint stores share: a ``saber.db`` database opened on first use, and every
call run in a worker thread on its pool (no driver call on the event loop)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

from saber.db import Database, Tx, open_database
from saber.graph.checkpoint.base import CheckpointStore, node_spec, node_state
from saber.graph.node import Node

P = ParamSpec("P")
T = TypeVar("T")


class PooledCheckpointStore(CheckpointStore):
    def __init__(self, target: str, *, pool_size: int | None = None, durable: bool = False) -> None:
        self._target = target
        self._pool_size = pool_size
        self._durable = durable
        self._db: Database | None = None
        self._opening = asyncio.Lock()

    async def _database(self) -> Database:
        if self._db is None:
            async with self._opening:
                if self._db is None:
                    self._db = await asyncio.to_thread(open_database, self._target, pool_size=self._pool_size)
        return self._db

    async def _write(self, fn: Callable[Concatenate[Tx, P], T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(tx, ...)`` in one write transaction, in a worker thread."""
        db = await self._database()

        def run() -> T:
            with db.transaction(write=True, durable=self._durable) as tx:
                return fn(tx, *args, **kwargs)

        return await asyncio.to_thread(run)

    async def _read(self, fn: Callable[Concatenate[Tx, P], T], *args: P.args, **kwargs: P.kwargs) -> T:
        db = await self._database()

        def run() -> T:
            with db.transaction() as tx:
                return fn(tx, *args, **kwargs)

        return await asyncio.to_thread(run)

    async def close(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            await asyncio.to_thread(db.close)


def state_row(task_id: str, node: Node) -> dict[str, Any]:
    """A node's state as the parameters of ``SAVE_NODE``."""
    status, result, error, attempts, duration_ms = node_state(node)
    return {"task_id": task_id, "node_id": node.id, "status": status, "result": result, "error": error,
            "attempts": attempts, "duration_ms": duration_ms}


def node_row(task_id: str, position: int, node: Node) -> dict[str, Any]:
    """A node, whole, as the parameters of ``INSERT_NODE``."""
    return {**state_row(task_id, node), "position": position, "spec": node_spec(node)}
