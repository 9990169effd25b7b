"""Databases for the storage-layer tests: SQLite files under tmp_path, and PostgreSQL with
pgvector — the server named by ``SABER_TEST_PGVECTOR_URL`` (an admin URL; tests create and drop
their own databases on it), else one started from the ``pgserver`` wheel (it ships pgvector)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def pgvector_admin_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
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
