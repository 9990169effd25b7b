"""What a process of the distributed mode opens: the queue, Redis, and (optionally) a worker."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from redis.asyncio import Redis

from saber.agent import Agent
from saber.cluster.api import queued_run_manager
from saber.cluster.queue import RunQueue
from saber.cluster.signals import check_redis, open_redis
from saber.cluster.worker import Worker
from saber.config import Settings
from saber.db.database import Database, open_database
from saber.observability import tracing
from saber.runs.manager import RunManager

log = logging.getLogger(__name__)


def queue_statuses(settings: Settings, task_ids: list[str]) -> dict[str, str]:
    """The run queue's status of each of ``task_ids`` it holds (blocking: for the CLI), or nothing
    outside the distributed mode."""
    from saber.cluster.signals import distributed

    if not task_ids or not distributed(settings) or not str(settings.database.url).startswith("postgres"):
        return {}
    db = open_database(str(settings.database.url), pool_size=1)
    try:
        return RunQueue(db, lease_seconds=settings.cluster.lease, max_running_per_user=1).statuses(task_ids)
    finally:
        db.close()


@dataclass(kw_only=True)
class Cluster:
    settings: Settings
    db: Database
    queue: RunQueue
    redis: Redis

    @classmethod
    async def open(cls, settings: Settings) -> Cluster:
        """Reach PostgreSQL (migrating it) and Redis; a ConfigError says which one failed."""
        if not settings.database.url:
            raise ValueError("the distributed mode needs database.url (SABER_DATABASE_URL)")
        tracing.setup(settings)
        db = await asyncio.to_thread(open_database, settings.database.url, pool_size=settings.database.pool_size)
        redis = open_redis(settings)
        try:
            await check_redis(redis, settings)
            queue = RunQueue(db, lease_seconds=settings.cluster.lease,
                             max_running_per_user=settings.server.max_running_per_user,
                             max_waiting_per_user=settings.cluster.max_waiting_per_user)
        except BaseException:
            await redis.aclose()
            db.close()
            raise
        return cls(settings=settings, db=db, queue=queue, redis=redis)

    def run_manager(self, agent: Agent) -> RunManager:
        return queued_run_manager(agent, self.queue, self.redis, self.settings)

    def worker(self, agent: Agent, *, concurrency: int) -> Worker:
        return Worker(agent, self.queue, self.redis, self.settings, concurrency=concurrency)

    async def aclose(self) -> None:
        with contextlib.suppress(Exception):
            await self.redis.aclose()
        self.db.close()
        await asyncio.to_thread(tracing.flush)
