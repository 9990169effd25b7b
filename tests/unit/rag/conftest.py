from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from saber.rag import HashingEmbedder, RagEngine, SQLiteStore


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[RagEngine]:
    store = SQLiteStore(tmp_path / "saber.db")
    yield RagEngine(store, HashingEmbedder(256))
    store.close()
