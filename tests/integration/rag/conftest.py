"""Both stores for one suite: SQLite, and PostgreSQL with pgvector on the session's shared server
(``pgvector_url`` in tests/conftest.py: a fresh database per test)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=[pytest.mark.postgres, pytest.mark.slow])])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str | None:
    """The PostgreSQL URL, or None for the SQLite file at ``tmp_path / "saber.db"``."""
    return str(request.getfixturevalue("pgvector_url")) if request.param == "postgres" else None


@pytest.fixture
def store_factory(store_url: str | None, tmp_path: Path) -> Iterator[Any]:
    """Opens a store (call it again for a second connection to the same one, like another process)."""
    from saber.rag import open_store

    opened: list[Any] = []

    def make() -> Any:
        opened.append(open_store(store_url, str(tmp_path / "saber.db")))
        return opened[-1]

    yield make
    for s in opened:
        s.close()
