from __future__ import annotations

from pathlib import Path

import pytest

from saber.config import Settings
from saber.rag import LocalE5Embedder, SQLiteStore, embedder_from_settings, engine_from_settings, open_store


def test_default_is_sqlite_in_home_with_local_embedder(tmp_path: Path) -> None:
    engine = engine_from_settings(Settings(home=tmp_path))
    assert isinstance(engine.store, SQLiteStore) and engine.store.path == tmp_path / "saber.db"
    assert isinstance(engine.embedder, LocalE5Embedder)
    assert engine.max_bytes == 64 * 1024 * 1024
    engine.close()


def test_bad_configuration_is_named() -> None:
    with pytest.raises(ValueError, match="embedding_base_url"):
        embedder_from_settings(Settings(embedding_provider="openai"))
    with pytest.raises(ValueError, match="mysql"):
        open_store("mysql://x/y")


def test_sqlite_tables_are_prefixed_and_wal(tmp_path: Path) -> None:
    import sqlite3

    SQLiteStore(tmp_path / "saber.db").close()
    conn = sqlite3.connect(tmp_path / "saber.db")
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    conn.close()
    # the file holds the whole package's schema (saber.db migrates it), each part under its prefix
    assert {"rag_documents", "rag_meta", "saber_schema_version"} <= names
    assert all(n.startswith(("rag_", "mem_", "checkpoint_", "saber_", "sqlite_")) for n in names)
    assert mode == "wal"
