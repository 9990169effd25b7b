from __future__ import annotations

from pathlib import Path

import pytest

from saber.config import Settings
from saber.rag import (
    LocalE5Embedder,
    LocalUSEEmbedder,
    RagEngine,
    SQLiteStore,
    embedder_from_settings,
    engine_from_settings,
    open_store,
)
from saber.rag.documents import EmbeddingError
from saber.rag.embedder import USE_MAX_CHARS


def test_default_is_sqlite_in_home_with_local_embedder(tmp_path: Path) -> None:
    engine = engine_from_settings(Settings(home=tmp_path))
    assert isinstance(engine.store, SQLiteStore) and engine.store.path == tmp_path / "saber.db"
    assert isinstance(engine.embedder, LocalUSEEmbedder)
    assert engine.max_bytes == 64 * 1024 * 1024
    engine.close()


def test_a_knowledge_base_indexed_with_e5_keeps_e5_unless_another_is_named(tmp_path: Path) -> None:
    """USE became the default after knowledge bases were built with E5: those go on working."""
    old = RagEngine(SQLiteStore(tmp_path / "saber.db"), LocalE5Embedder())
    old.ingest_text("Tea", "Green tea is brewed at 80 degrees.")
    old.close()
    engine = engine_from_settings(Settings(home=tmp_path))
    assert isinstance(engine.embedder, LocalE5Embedder) and engine.search("green tea", 1)[0].title == "Tea"
    engine.close()
    named = engine_from_settings(Settings(home=tmp_path, embedding={"local_model": "use-multilingual-v3"}))
    assert isinstance(named.embedder, LocalUSEEmbedder)
    with pytest.raises(EmbeddingError, match="indexed with local:multilingual-e5-small"):
        named.search("green tea", 1)
    named.close()
    fresh = engine_from_settings(Settings(home=tmp_path / "new", embedding={"local_model": "multilingual-e5-small"}))
    assert isinstance(fresh.embedder, LocalE5Embedder)
    fresh.close()


def test_use_reads_at_most_its_window_of_a_long_text() -> None:
    use = LocalUSEEmbedder()
    long = "茶" * 10 + "x " * 200_000  # a pasted book: only the start is read
    assert (use.embed_query(long) == use.embed_query(long[:USE_MAX_CHARS])).all()
    assert use.embed_documents([]).shape == (0, 512)


def test_bad_configuration_is_named() -> None:
    with pytest.raises(ValueError, match=r"embedding\.base_url"):
        embedder_from_settings(Settings(embedding={"provider": "openai"}))
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
