"""``saber worker``: take runs from the distributed mode's queue until SIGTERM.

On SIGTERM (or Ctrl-C) the worker takes no new run, lets its runs finish for
``cluster.worker_grace`` seconds, then hands the rest back to the queue (react tasks keep their
checkpoints, so the next worker resumes them) and exits.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import TYPE_CHECKING, Annotated

import typer

from saber.cli.output import UsageError

if TYPE_CHECKING:
    from saber.config import Settings

log = logging.getLogger(__name__)


def worker_command(
    concurrency: Annotated[int, typer.Option(min=1, max=10000, help="Runs this worker runs at once.")] = 4,
    metrics_port: Annotated[int | None, typer.Option(min=0, max=65535,
                                                     help="Serve Prometheus metrics on this port.")] = None,
    metrics_host: Annotated[str, typer.Option(help="Address of the metrics endpoint.")] = "127.0.0.1",
) -> None:
    """Run queued requests (distributed mode: database_url and redis_url set)."""
    from saber.config import Settings

    logging.getLogger("saber").setLevel(logging.WARNING)  # a worker's operator sees its warnings
    settings = Settings.load()
    if not (settings.database.url and settings.redis.url):
        raise UsageError("saber worker needs the distributed mode: set database.url (PostgreSQL) and redis.url "
                          "(SABER_DATABASE_URL, SABER_REDIS_URL)")
    if metrics_port is not None:
        from prometheus_client import start_http_server

        try:
            start_http_server(metrics_port, addr=metrics_host)
        except OSError as exc:
            raise UsageError(f"--metrics-port {metrics_port}: cannot listen on {metrics_host}: {exc.strerror or exc}") from None
    asyncio.run(_work(settings, concurrency))


async def _work(settings: Settings, concurrency: int) -> None:
    from saber.agent import Agent
    from saber.cluster.runtime import Cluster

    agent = await asyncio.to_thread(Agent, settings)
    try:
        cluster = await Cluster.open(settings)
        try:
            worker = cluster.worker(agent, concurrency=concurrency)
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, worker.stop)
            typer.echo(f"saber: worker {worker.name} taking runs ({concurrency} at once)", err=True)
            await worker.run()
            typer.echo(f"saber: worker {worker.name} stopped: {worker.stats.finished} run(s) finished, "
                       f"{worker.stats.handed_back} handed back", err=True)
        finally:
            await cluster.aclose()
    finally:
        await agent.aclose()
