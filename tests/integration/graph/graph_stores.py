"""Checkpoint stores for the integration tests: SQLite in a temp dir, PostgreSQL in a fresh database."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"


def pg_database() -> Iterator[str]:
    """Create a throwaway database, yield its DSN, drop it afterwards."""
    name = f"saber_graph_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql://postgres@127.0.0.1:5432/{name}"
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def store_target(kind: str, tmp_path: Path, dsn: str | None) -> str:
    return str(tmp_path / "saber.db") if kind == "sqlite" else str(dsn)
