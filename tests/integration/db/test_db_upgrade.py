"""A database created by Saber before migrations existed — the old DDL, filled with documents,
memories and checkpoints — is upgraded, and every row is found intact through today's stores."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from old_schema import (
    CHECKPOINT_POSTGRES,
    CHECKPOINT_SQLITE,
    DIM,
    DOCS,
    EMBEDDER,
    HISTORY,
    MEMORIES,
    MEMORY_POSTGRES,
    MEMORY_SQLITE,
    NODES,
    PREFERENCES,
    RAG,
    RAG_CHUNKS_POSTGRES,
    RAG_CHUNKS_SQLITE,
    fill,
    unit,
)

from saber.agent.memory.postgres_store import PostgresMemoryStore
from saber.agent.memory.sqlite_store import SQLiteMemoryStore
from saber.agent.memory.store import MemoryStore, NewMemory
from saber.db import current, head, open_database
from saber.graph.checkpoint import CheckpointStore, PostgresCheckpointStore, SQLiteCheckpointStore
from saber.graph.checkpoint.base import new_owner
from saber.rag.documents import ChunkRecord, NewDocument
from saber.rag.store import KnowledgeStore, open_store


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def create_old_sqlite(path: Path) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("BEGIN")
    for statement in (*RAG, *RAG_CHUNKS_SQLITE, *_statements(MEMORY_SQLITE), *_statements(CHECKPOINT_SQLITE)):
        conn.execute(statement)
    fill(conn.execute, conn.executemany, postgres=False)
    conn.execute("COMMIT")
    conn.close()


def create_old_postgres(url: str) -> None:
    import psycopg
    from pgvector.psycopg import register_vector

    with psycopg.connect(url) as conn:
        conn.execute(RAG_CHUNKS_POSTGRES[0])  # CREATE EXTENSION vector, as the old store did first
        conn.commit()
        register_vector(conn)
        with conn.transaction():
            for statement in (*RAG, *RAG_CHUNKS_POSTGRES[1:], *_statements(MEMORY_POSTGRES),
                              *_statements(CHECKPOINT_POSTGRES)):
                conn.execute(statement.encode())
            with conn.cursor() as cur:
                fill(cur.execute, cur.executemany, postgres=True)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=[pytest.mark.postgres, pytest.mark.slow])])
def old_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    if request.param == "sqlite":
        path = tmp_path / "saber.db"
        create_old_sqlite(path)
        yield "sqlite", str(path)
    else:
        url = request.getfixturevalue("pgvector_url")
        create_old_postgres(url)
        yield "postgres", url


def _stores(kind: str, target: str) -> tuple[KnowledgeStore, MemoryStore, CheckpointStore]:
    if kind == "sqlite":
        return open_store(None, target), SQLiteMemoryStore(target), SQLiteCheckpointStore(target)
    return open_store(target), PostgresMemoryStore(target), PostgresCheckpointStore(target)


async def test_old_database_upgrades_with_every_document_memory_and_checkpoint_intact(
    old_database: tuple[str, str],
) -> None:
    kind, target = old_database
    db = open_database(target)  # what every process does first: migrate
    try:
        assert current(db) == head()
    finally:
        db.close()
    knowledge, memory, checkpoints = _stores(kind, target)
    try:
        check_documents(knowledge)
        check_memory(memory)
        await check_checkpoints(checkpoints)
    finally:
        knowledge.close()
        memory.close()
        await checkpoints.close()


def check_documents(store: KnowledgeStore) -> None:
    store.ensure_embedding(EMBEDDER, DIM)  # the same embedder as before: accepted, nothing dropped
    assert store.revision() == 3
    docs = {d.id: d for d in store.list_documents()}
    assert set(docs) == {d["id"] for d in DOCS}
    texts: list[str] = []
    for d in DOCS:
        stored = store.get_document(d["id"])
        assert (stored.title, stored.content, stored.version, stored.indexed) == (d["title"], d["content"], 1, True)
        assert docs[d["id"]].chunk_count == len(d["chunks"])
        texts.extend(d["chunks"])
    ids, tokens = store.keyword_corpus()
    assert [" ".join(t) for t in tokens] == texts
    for n, text in enumerate(texts):  # every vector still finds its own chunk first
        [(best, score)] = store.vector_search(unit(n), 1)
        assert store.get_chunks([best])[best].text == text and score == pytest.approx(1.0, abs=1e-4)
    # and the upgraded store takes new documents
    vectors = np.stack([unit(7)])
    result = store.save_document(NewDocument(title="新", source="", doc_type="text", content="新的 文档"),
                                 ["新的 文档"], [ChunkRecord(section=0, ordinal=0, text="新的 文档", tokens=["新的", "文档"])],
                                 vectors)
    assert result.status == "created" and store.revision() == 4 and len(store.list_documents()) == len(DOCS) + 1


def check_memory(store: MemoryStore) -> None:
    for user in ("alice", "bob"):
        expected = [(t, imp, i) for i, (u, t, imp) in enumerate(MEMORIES) if u == user]
        records = store.list_memories(user)
        assert [(r.text, r.importance) for r in records] == [(t, imp) for t, imp, _ in expected]
        for record, (_, _, i) in zip(records, expected, strict=True):
            assert np.array_equal(record.vector, unit(i)) and record.embedder == EMBEDDER
        assert [(h.role, h.content) for h in store.recent_history(user, 10)] == [
            (r, c) for u, r, c in HISTORY if u == user
        ]
        assert store.get_preferences(user) == {k: v for u, k, v in PREFERENCES if u == user}
    record, merged = store.insert_memory("alice", NewMemory(text="new one", norm="new one", importance=0.3,
                                                            source="rules", embedder=EMBEDDER, vector=unit(5), now=300.0))
    assert not merged and record.id > max(r.id for r in store.list_memories("bob"))


async def check_checkpoints(store: CheckpointStore) -> None:
    saved = await store.load("task-1")
    assert saved is not None
    assert (saved.status, saved.config, saved.meta, saved.replans) == ("running", {"max_parallel": 4},
                                                                       {"user_id": "alice"}, 1)
    assert [(n.id, n.status.value, n.result, n.error, n.attempts, n.params, n.depends_on) for n in saved.nodes] == [
        (nid, status, result, error, attempts, spec["params"], spec["depends_on"])
        for nid, spec, status, result, error, attempts, _ in NODES
    ]
    assert await store.list_tasks(status="running") == ["task-1"]
    owner = new_owner()
    await store.claim("task-1", owner)  # the old row had no owner: resumable
    assert (await store.load("task-1")).owner == owner  # type: ignore[union-attr]


def test_a_checkpoint_file_from_before_leases_gains_the_lease_columns(tmp_path: Path) -> None:
    path = tmp_path / "saber.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE checkpoint_tasks (task_id TEXT PRIMARY KEY, status TEXT NOT NULL, "
                     "config TEXT NOT NULL, replans INTEGER NOT NULL, meta TEXT NOT NULL, created_at REAL NOT NULL, "
                     "updated_at REAL NOT NULL)")
        conn.execute("INSERT INTO checkpoint_tasks VALUES ('t', 'done', '{}', 0, '{}', 1, 1)")
    open_database(path).close()
    with sqlite3.connect(path) as conn:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(checkpoint_tasks)")}
        rows = conn.execute("SELECT task_id, status, owner, lease_until FROM checkpoint_tasks").fetchall()
    assert {"owner", "lease_until"} <= columns
    assert rows == [("t", "done", None, None)]


def test_upgrading_twice_changes_nothing(tmp_path: Path) -> Any:
    path = tmp_path / "saber.db"
    open_database(path).close()
    open_database(path).close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version_num FROM saber_schema_version").fetchall() == [(head(),)]
        assert conn.execute("SELECT COUNT(*) FROM rag_meta WHERE key = 'revision'").fetchone() == (1,)
