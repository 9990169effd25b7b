"""The heartbeat that keeps a running task's checkpoint lease alive (see ``CheckpointStore``)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from saber.graph.checkpoint.base import CheckpointStore, TaskClaimedError
from saber.outages import retrying

log = logging.getLogger(__name__)


class LeaseKeeper:
    """Renews ``owner``'s lease every third of its length: a node may run far longer than the
    lease (a sub-agent, a slow tool). Calls ``on_lost`` once if another process took the task."""

    def __init__(self, store: CheckpointStore, task_id: str, owner: str,
                 on_lost: Callable[[TaskClaimedError], Coroutine[Any, Any, None]]) -> None:
        self.store, self.task_id, self.owner, self.on_lost = store, task_id, owner, on_lost
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._beat(), name=f"saber-lease-{self.task_id}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _beat(self) -> None:
        beat = self.store.lease_seconds / 3.0
        while True:
            await asyncio.sleep(beat)
            try:  # the database is unreachable: try again soon, so the lease is renewed as soon as it is back
                async for attempt in retrying(timeout=None, wait_initial=0.25, wait_max=beat):
                    with attempt:
                        still_ours = await self.store.renew(self.task_id, self.owner)
            except Exception:  # not an outage: keep beating, the saves will tell
                log.exception("renewing the lease of task %s failed", self.task_id)
                continue
            if not still_ours:
                await self.on_lost(TaskClaimedError.lost(self.task_id, self.owner))
                return
