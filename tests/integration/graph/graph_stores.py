"""Checkpoint stores for the integration tests: SQLite in a temp dir, PostgreSQL in a fresh database."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg

PG_ADMIN = os.environ.get("SABER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
"""Any PostgreSQL (no pgvector needed); override with ``SABER_TEST_POSTGRES_URL``."""


def pg_database() -> Iterator[str]:
    """Create a throwaway database, yield its DSN, drop it afterwards."""
    name = f"saber_graph_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield PG_ADMIN.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def store_target(kind: str, tmp_path: Path, dsn: str | None) -> str:
    return str(tmp_path / "saber.db") if kind == "sqlite" else str(dsn)
