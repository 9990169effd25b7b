"""PostgreSQL with pgvector and the machine's Redis for the cluster tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from cluster_helpers import ADMIN_URL, REDIS_URL


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

