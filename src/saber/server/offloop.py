"""Store calls that would block the event loop, run in a worker thread instead.

The SQLite checkpoint store is ``async def`` outside and synchronous SQLite inside (until the
stores become truly async): awaited on the server's loop, every read would stall every stream.
Such a call runs in a worker thread on a loop of its own. A store whose methods really are
async (PostgreSQL: its connections belong to the server's loop) is awaited as usual.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from saber.graph.checkpoint import SQLiteCheckpointStore

T = TypeVar("T")


def blocks_the_loop(store: Any) -> bool:
    return isinstance(store, SQLiteCheckpointStore)


async def store_call(store: Any, work: Callable[[], Awaitable[T]]) -> T:
    """``await work()``, off the loop when ``store`` is one that blocks it."""
    if not blocks_the_loop(store):
        return await work()

    async def run() -> T:
        return await work()

    return await asyncio.to_thread(asyncio.run, run())
