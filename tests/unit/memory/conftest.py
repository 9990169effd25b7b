from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from saber.agent.memory.sqlite_store import SQLiteMemoryStore
from saber.rag.embedder import LocalE5Embedder


@pytest.fixture(scope="session")
def embedder() -> LocalE5Embedder:
    return LocalE5Embedder()


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SQLiteMemoryStore]:
    store = SQLiteMemoryStore(tmp_path / "saber.db")
    yield store
    store.close()
