"""How ``create_app`` and ``saber serve`` switch to the distributed mode (both URLs set)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from saber.config import Settings

if TYPE_CHECKING:
    from saber.agent import Agent
    from saber.cluster.runtime import Cluster
    from saber.cluster.worker import Worker
    from saber.runs.manager import RunManager

log = logging.getLogger(__name__)


@dataclass(kw_only=True)
class ServingCluster:
    cluster: Cluster
    runs: RunManager
    worker: Worker | None = None
    worker_task: asyncio.Task[None] | None = field(default=None)

    async def stop(self) -> None:
        if self.worker is not None and self.worker_task is not None:
            self.worker.stop()
            await asyncio.gather(self.worker_task, return_exceptions=True)
        await self.cluster.aclose()


async def start_cluster(agent: Agent, settings: Settings, *, with_worker: int = 0) -> ServingCluster | None:
    """None unless ``database_url`` and ``redis_url`` are both set; else the queue-backed run manager,
    and a worker of ``with_worker`` slots in this process when that is above 0."""
    from saber.cluster.signals import distributed

    if not distributed(settings):
        if with_worker:
            raise ValueError("--with-worker needs the distributed mode: set database.url and redis.url")
        return None
    from saber.cluster.runtime import Cluster

    cluster = await Cluster.open(settings)
    serving = ServingCluster(cluster=cluster, runs=cluster.run_manager(agent))
    if with_worker:
        serving.worker = cluster.worker(agent, concurrency=with_worker)
        serving.worker_task = asyncio.create_task(serving.worker.run(), name="saber-serve-worker")
    log.info("distributed mode: requests go to the run queue%s", " (and a worker runs here)" if with_worker else "")
    return serving


def metrics_response() -> tuple[bytes, str]:
    from saber.observability.metrics import exposition

    return exposition()


async def refresh_queue_gauge(runs: object) -> None:
    """Before a scrape: the queue's depth as the database says it now (``runs``: the app's run
    manager; its backend has a queue in the distributed mode)."""
    queue = getattr(getattr(runs, "backend", None), "queue", None)
    if queue is None:
        return
    from saber.observability.metrics import QUEUE_DEPTH

    with contextlib.suppress(Exception):
        QUEUE_DEPTH.set(await asyncio.to_thread(queue.depth))
