"""Prometheus metrics of API nodes (``/metrics``) and workers (``saber worker --metrics-port``).

Runs are counted from their events, wherever they run: by mode and outcome, with run and node
durations (by tool), retries, races won and model tokens; the queue adds its depth and wait.
"""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge, Histogram, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

_SECONDS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 180, 600)

HTTP_REQUESTS = Counter("saber_http_requests", "HTTP requests answered, by method, route and status",
                        ["method", "route", "status"])
RUNS = Counter("saber_runs", "Runs finished, by mode and outcome (done, cancelled, error)", ["mode", "outcome"])
RUN_SECONDS = Histogram("saber_run_duration_seconds", "Seconds from a run's start to its done, by mode", ["mode"],
                        buckets=_SECONDS)
NODE_SECONDS = Histogram("saber_node_duration_seconds", "Seconds a graph node took, by tool and status",
                         ["tool", "status"], buckets=_SECONDS)
RETRIES = Counter("saber_node_retries", "Attempts of graph nodes beyond their first, by tool", ["tool"])
RACES_WON = Counter("saber_races_won", "Race groups decided, by the winning tool", ["tool"])
TOKENS = Counter("saber_model_tokens", "Model tokens of finished runs, by kind (prompt, completion)", ["kind"])
QUEUE_DEPTH = Gauge("saber_queue_depth", "Runs waiting in the queue for a worker")
QUEUE_WAIT = Histogram("saber_queue_wait_seconds", "Seconds a run waited in the queue before a worker took it",
                       buckets=_SECONDS)
RUNS_RUNNING = Gauge("saber_worker_runs_running", "Runs this worker is running now")
RUNS_RESUMED = Counter("saber_runs_taken_over", "Runs a worker took over from a dead or stopping worker")


class RunObserver:
    """Feed it one run's events in order; it records the run's metrics as they come."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.failed = False

    def observe(self, type_: str, data: dict[str, Any]) -> None:
        if type_ == "node_done":
            tool = str(data.get("tool", ""))
            NODE_SECONDS.labels(tool, str(data.get("status", ""))).observe(float(data.get("duration_ms", 0)) / 1000)
            if int(data.get("attempts") or 0) > 1:
                RETRIES.labels(tool).inc(int(data["attempts"]) - 1)
        elif type_ == "race_won":
            RACES_WON.labels(str(data.get("tool", ""))).inc()
        elif type_ == "error":
            self.failed = True
        elif type_ == "done":
            mode = str(data.get("mode", ""))
            outcome = "cancelled" if data.get("interrupted") else ("error" if self.failed else "done")
            RUNS.labels(mode, outcome).inc()
            RUN_SECONDS.labels(mode).observe(time.monotonic() - self.started)
            usage = data.get("usage") or {}
            for kind in ("prompt", "completion"):
                if usage.get(f"{kind}_tokens"):
                    TOKENS.labels(kind).inc(int(usage[f"{kind}_tokens"]))


def exposition() -> tuple[bytes, str]:
    """The metrics in Prometheus's text format, and its content type."""
    return generate_latest(), CONTENT_TYPE_LATEST


class HttpMetrics:
    """ASGI middleware counting requests by route template (not by raw path: ids would explode it)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            route = getattr(scope.get("route"), "path", "unmatched")
            HTTP_REQUESTS.labels(scope.get("method", ""), route, str(status)).inc()
