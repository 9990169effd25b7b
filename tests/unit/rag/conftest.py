from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from saber.rag import HashingEmbedder, RagEngine, SQLiteStore


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[RagEngine]:
    engine = RagEngine(SQLiteStore(tmp_path / "saber.db"), HashingEmbedder(256))
    yield engine
    engine.close()
