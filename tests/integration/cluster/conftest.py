"""PostgreSQL with pgvector and the machine's Redis for the cluster tests."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from cluster_helpers import REDIS_URL


@pytest.fixture(scope="session")
def pgvector_admin_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``SABER_TEST_PGVECTOR_URL`` (an admin URL of a PostgreSQL with pgvector), else a server
    started from the ``pgserver`` wheel (the machine's PostgreSQL has no pgvector)."""
    url = os.environ.get("SABER_TEST_PGVECTOR_URL")
    if url:
        yield url
        return
    import pgserver

    server: Any = pgserver.get_server(tmp_path_factory.mktemp("pgdata"), cleanup_mode="stop")
    yield server.get_uri()
    server.cleanup()


@pytest.fixture
def pg_url(pgvector_admin_url: str) -> Iterator[str]:
    import psycopg
    from sqlalchemy import make_url

    name = f"saber_cluster_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pgvector_admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"'.encode())
    try:
        yield make_url(pgvector_admin_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(pgvector_admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())


ADMIN_URL = os.environ.get("SABER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


@pytest.fixture
def plain_pg_url() -> Iterator[str]:
    """A fresh database on the machine's PostgreSQL (no pgvector needed: the queue alone), dropped afterwards."""
    import psycopg

    name = f"saber_queue_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=5) as admin:
        admin.execute(f'CREATE DATABASE "{name}"'.encode())
    try:
        yield ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())


@pytest.fixture
def redis_prefix() -> Iterator[str]:
    """A key prefix of this test's own on the machine's Redis; its keys are deleted afterwards."""
    import redis

    prefix = f"saber-test-{uuid.uuid4().hex[:10]}:"
    yield prefix
    client = redis.Redis.from_url(REDIS_URL)
    for key in client.scan_iter(match=prefix + "*"):
        client.delete(key)
    client.close()

