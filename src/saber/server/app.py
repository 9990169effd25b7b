"""``create_app``: the FastAPI application: routers, errors, auth, limits and the agent's lifetime."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from fastapi import FastAPI

from saber.agent import Agent
from saber.cluster.serving import start_cluster
from saber.config import Settings
from saber.observability import tracing
from saber.observability.metrics import HttpMetrics
from saber.redact import install_log_redaction
from saber.runs.local import LocalRuns
from saber.runs.manager import RunManager
from saber.server import metrics_route
from saber.server.auth import KeyGate, KeyRing
from saber.server.errors import install_error_handlers
from saber.server.hostguard import AllowedHosts, HostOriginGuard
from saber.server.middleware import RequestContext
from saber.server.owners import move_legacy_owners
from saber.server.routes import approvals, chat, documents, mcp, memory, openai, status, tasks
from saber.server.routes.documents import MAX_FILES
from saber.server.webui import mount_web_ui

log = logging.getLogger(__name__)


def create_app(agent: Agent | None = None, settings: Settings | None = None, *, bound_host: str | None = None) -> FastAPI:
    """The ASGI app. Without ``agent`` one is built from ``settings`` (or saber.toml and the
    environment) when the app starts, off the event loop, and closed when it stops; an agent
    passed in stays the caller's to close. ``bound_host``: the address given to ``saber serve``,
    a ``Host`` the app answers to besides loopback names and ``server.allowed_hosts``."""
    install_log_redaction()  # no secret from a query or a tool result in any log line
    settings = settings or (agent.settings if agent is not None else Settings.load())
    keys = KeyRing.from_settings(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            tracing.setup(settings)  # otel_endpoint: spans for requests, runs, model calls, nodes, tools
            built = agent if agent is not None else await asyncio.to_thread(Agent, settings)
        except Exception as exc:  # `saber serve` reports it in one line
            app.state.startup_error = f"{type(exc).__name__}: {exc}"
            raise
        await asyncio.to_thread(_import_lazy_modules)
        await built.start()  # MCP servers connect now (bounded by mcp_startup_timeout), not on the first request
        if built.services.knowledge is not None:  # embeds chunks an earlier process left without vectors
            await asyncio.to_thread(built.services.knowledge.fill_in_background)
            await asyncio.to_thread(move_legacy_owners, settings.home / "server.db", built.services.knowledge)
        try:
            cluster = await start_cluster(built, settings, with_worker=app.state.with_worker)
        except Exception as exc:
            app.state.startup_error = f"{type(exc).__name__}: {exc}"
            raise
        runs = cluster.runs if cluster is not None else RunManager(
            LocalRuns(built), max_running_per_user=settings.server.max_running_per_user,
            keep_finished=settings.server.keep_finished)
        app.state.agent, app.state.runs = built, runs
        try:
            yield
        finally:
            await runs.shutdown(settings.server.shutdown_grace)
            if cluster is not None:
                await cluster.stop()
            if agent is None:
                await built.aclose()
            app.state.agent = None
            await asyncio.to_thread(tracing.flush)

    app = FastAPI(title="Saber", version="0.1.0", lifespan=lifespan,
                  description="Saber's agent over HTTP: REST + Server-Sent Events, and an OpenAI-compatible endpoint.",
                  docs_url=None, redoc_url=None)  # their pages load scripts from a CDN: blank offline; the schema is /openapi.json
    app.state.settings, app.state.keys, app.state.agent, app.state.startup_error = settings, keys, None, None
    app.state.with_worker = 0  # distributed mode: slots of a worker in this process (saber serve --with-worker)
    install_error_handlers(app)
    upload_limit = int(MAX_FILES * settings.rag.max_file_mb * 1048576) + 1048576

    def limit_for(path: str) -> int:
        return upload_limit if path.rstrip("/") == "/api/documents" else settings.server.max_body_bytes

    app.add_middleware(KeyGate, keys=keys)
    app.add_middleware(HostOriginGuard, hosts=AllowedHosts(settings.server.allowed_hosts, bound_host))
    app.add_middleware(HttpMetrics)
    app.add_middleware(RequestContext, limit_for=limit_for)  # added last: the outermost
    for router in (chat.router, tasks.router, approvals.router, mcp.router, documents.router, memory.router, status.router, openai.router):
        app.include_router(router)
    app.include_router(metrics_route.router)
    mount_web_ui(app)
    return app


def _import_lazy_modules() -> None:
    """Modules the first request would otherwise import on the event loop (the openai client
    loads its resources on first use; multipart parsing on the first upload)."""
    import importlib

    for name in ("openai.resources.chat.completions", "openai.resources.embeddings", "python_multipart"):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
