"""A real PostgreSQL with pgvector (the ``pgserver`` wheel) once per session, a fresh database per test module."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    import pgserver  # the postgres extra, part of dev: a missing package must fail, not skip

    server = pgserver.get_server(tmp_path_factory.mktemp("pgdata"), cleanup_mode="stop")
    yield server
    server.cleanup()


@pytest.fixture(scope="module")
def pg_url(pg_server: Any) -> Iterator[str]:
    import psycopg

    name = f"rag_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield pg_server.get_uri(name)
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _reset_pg(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS rag_chunks, rag_chunk_removals, rag_sections, rag_document_versions, rag_documents, "
                     "rag_meta, "
                     "saber_schema_version")  # the next store to open migrates it afresh


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=[pytest.mark.postgres, pytest.mark.slow])])
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """Opens a store (call it again for a second connection to the same one, like another process)."""
    from saber.rag import open_store

    opened: list[Any] = []
    if request.param == "postgres":
        url = request.getfixturevalue("pg_url")
        _reset_pg(url)

        def make() -> Any:
            opened.append(open_store(url))
            return opened[-1]
    else:
        def make() -> Any:
            opened.append(open_store(None, str(tmp_path / "saber.db")))
            return opened[-1]
    yield make
    for s in opened:
        s.close()
