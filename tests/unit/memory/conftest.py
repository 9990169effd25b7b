from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from saber.agent.memory.sqlite_store import SQLiteMemoryStore
from saber.rag.embedder import LocalUSEEmbedder


@pytest.fixture(scope="session")
def embedder() -> LocalUSEEmbedder:
    return LocalUSEEmbedder()  # the default bundled model


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SQLiteMemoryStore]:
    store = SQLiteMemoryStore(tmp_path / "saber.db")
    yield store
    store.close()
