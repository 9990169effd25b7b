from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from saber.agent.memory.store import MemoryStore
from saber.rag.embedder import LocalUSEEmbedder

ADMIN_URL = os.environ.get("SABER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


@pytest.fixture(scope="session")
def embedder() -> LocalUSEEmbedder:
    return LocalUSEEmbedder()  # the default bundled model


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh database on the local PostgreSQL, dropped afterwards."""
    import psycopg

    name = f"saber_mem_test_{uuid.uuid4().hex[:12]}"
    try:
        admin = psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.fail(f"PostgreSQL is not reachable at {ADMIN_URL} (set SABER_TEST_POSTGRES_URL): {exc}")
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"'.encode())
        try:
            yield ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())


def open_store(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> MemoryStore:
    if kind == "sqlite":
        from saber.agent.memory.sqlite_store import SQLiteMemoryStore

        return SQLiteMemoryStore(tmp_path / "saber.db")
    from saber.agent.memory.postgres_store import PostgresMemoryStore

    return PostgresMemoryStore(request.getfixturevalue("postgres_url"))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryStore]:
    s = open_store(request.param, tmp_path, request)
    yield s
    s.close()
