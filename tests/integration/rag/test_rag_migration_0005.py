"""Migration 0005 on a SQLite knowledge base written before it: the chunk table is rebuilt with the
same rows and vectors, and no chunk id is ever issued twice (a filler's claim names chunks by id)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np

from saber.rag import open_store
from saber.rag.documents import ChunkRecord, NewDocument

OLD = (
    "CREATE TABLE rag_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "INSERT INTO rag_meta VALUES ('revision', '3'), ('embedder', 'test'), ('embedding_dim', '4')",
    """CREATE TABLE rag_documents (id TEXT PRIMARY KEY, doc_key TEXT NOT NULL UNIQUE, title TEXT NOT NULL,
        source TEXT NOT NULL, doc_type TEXT NOT NULL, summary TEXT NOT NULL DEFAULT '',
        content_hash TEXT NOT NULL UNIQUE, content TEXT NOT NULL, version INTEGER NOT NULL,
        indexed INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL, updated_at TEXT NOT NULL)""",
    """CREATE TABLE rag_sections (document_id TEXT NOT NULL, ordinal INTEGER NOT NULL, text TEXT NOT NULL,
        PRIMARY KEY (document_id, ordinal))""",
    "CREATE TABLE rag_chunks (id INTEGER PRIMARY KEY AUTOINCREMENT, document_id TEXT NOT NULL, "
    "section_ordinal INTEGER NOT NULL, ordinal INTEGER NOT NULL, text TEXT NOT NULL, "
    "tokens TEXT NOT NULL, embedding BLOB NOT NULL)",
)


def _unit(i: int) -> bytes:
    v = np.zeros(4, dtype=np.float32)
    v[i] = 1.0
    return v.tobytes()


def test_old_chunks_keep_their_vectors_and_ids_are_not_reused(tmp_path: Path) -> None:
    path = tmp_path / "saber.db"
    with sqlite3.connect(path) as db:
        for statement in OLD:
            db.execute(statement)
        db.execute("INSERT INTO rag_documents VALUES ('d1', 'a.md', 'A', 'a.md', 'md', '', 'h1', 'alpha beta gamma', "
                   "1, 1, '2026-01-01T00:00:00+00:00', '2026-01-01T00:00:00+00:00')")
        db.execute("INSERT INTO rag_sections VALUES ('d1', 0, 'alpha beta gamma')")
        db.executemany("INSERT INTO rag_chunks (document_id, section_ordinal, ordinal, text, tokens, embedding) "
                       "VALUES ('d1', 0, ?, ?, ?, ?)",
                       [(i, word, word, _unit(i)) for i, word in enumerate(("alpha", "beta", "gamma"))])
        db.execute("DELETE FROM rag_chunks WHERE id = 3")  # issued once, gone: must never come back
    db.close()
    store = open_store(None, str(path))
    store.ensure_embedding("test", 4)
    assert store.pending_count() == 0 and store.list_documents()[0].search == "hybrid"
    assert [cid for cid, _ in store.vector_search(np.frombuffer(_unit(1), dtype=np.float32), 1)] == [2]
    assert store.keyword_changes(None).ids == [1, 2]
    store.save_document(NewDocument(title="B", source="b.md", doc_type="md", content="delta"), ["delta"],
                        [ChunkRecord(section=0, ordinal=0, text="delta", tokens=["delta"])])
    ids = store.keyword_changes(None).ids
    assert ids[:2] == [1, 2] and ids[2] > 3 and store.pending_count() == 1
    store.close()
