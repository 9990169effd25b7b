"""Every test runs without the developer's own Saber setup: no SABER_* variables, and a fresh
SABER_HOME, so ``~/.saber/saber.toml`` (a real model, a real database) can never leak in."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# Hypothesis's timing checks (200 ms per example, "input generation is slow") measure the machine's
# load, not the code: a run beside another one failed them. Correctness checks stay on.
settings.register_profile("saber", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("saber")


@pytest.fixture(autouse=True)
def _isolated_saber_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Path:
    for key in list(os.environ):
        if key.startswith("SABER_"):
            monkeypatch.delenv(key)
    home = tmp_path_factory.mktemp("saber-home")
    monkeypatch.setenv("SABER_HOME", str(home))
    return home


@pytest.fixture
def refused_url() -> Iterator[str]:
    """A loopback port that is bound but not listening: connecting is refused at once (a dead
    server, an unreachable network)."""
    import socket

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        sock.close()


@pytest.fixture(scope="session")
def pgvector_admin_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``SABER_TEST_PGVECTOR_URL`` (an admin URL of a PostgreSQL with pgvector), else a server
    started from the ``pgserver`` wheel (the machine's PostgreSQL has no pgvector); one per session."""
    url = os.environ.get("SABER_TEST_PGVECTOR_URL")
    if url:
        yield url
        return
    import pgserver  # the postgres extra, part of dev: a missing package must fail, not skip

    server: Any = pgserver.get_server(tmp_path_factory.mktemp("pgdata"), cleanup_mode="stop")
    yield server.get_uri()
    server.cleanup()


@pytest.fixture
def pgvector_url(pgvector_admin_url: str) -> Iterator[str]:
    """A fresh database on that server, dropped afterwards."""
    import psycopg
    from sqlalchemy import make_url

    name = f"saber_db_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pgvector_admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"'.encode())
    try:
        yield make_url(pgvector_admin_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(pgvector_admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())


_SPAN_EXPORTER: Any = None


@pytest.fixture
def otel_spans() -> Iterator[Any]:
    """Saber's tracing on, spans kept in memory (the OTel SDK's ``InMemorySpanExporter``). The SDK
    lets a process set its global tracer provider once, so every test shares one, cleared per test."""
    global _SPAN_EXPORTER
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from saber.observability import tracing

    if _SPAN_EXPORTER is None:
        _SPAN_EXPORTER = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_SPAN_EXPORTER))
        tracing.enable(provider)
    tracing.enable()
    _SPAN_EXPORTER.clear()
    yield _SPAN_EXPORTER
    tracing._enabled = False
