"""The schema exactly as Saber created it before ``saber.db`` and its migrations (copied from the
stores' DDL on main at a81acd2), and rows written the way those stores wrote them."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

RAG = (
    "CREATE TABLE IF NOT EXISTS rag_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "INSERT INTO rag_meta (key, value) SELECT 'revision', '0' WHERE NOT EXISTS "
    "(SELECT 1 FROM rag_meta WHERE key = 'revision')",
    """CREATE TABLE IF NOT EXISTS rag_documents (
        id TEXT PRIMARY KEY, doc_key TEXT NOT NULL UNIQUE, title TEXT NOT NULL, source TEXT NOT NULL,
        doc_type TEXT NOT NULL, summary TEXT NOT NULL DEFAULT '', content_hash TEXT NOT NULL UNIQUE,
        content TEXT NOT NULL, version INTEGER NOT NULL, indexed INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS rag_document_versions (
        document_id TEXT NOT NULL, version INTEGER NOT NULL, title TEXT NOT NULL, content_hash TEXT NOT NULL,
        content TEXT NOT NULL, created_at TEXT NOT NULL, PRIMARY KEY (document_id, version))""",
    """CREATE TABLE IF NOT EXISTS rag_sections (
        document_id TEXT NOT NULL, ordinal INTEGER NOT NULL, text TEXT NOT NULL, PRIMARY KEY (document_id, ordinal))""",
)
RAG_CHUNKS_SQLITE = (
    "CREATE TABLE rag_chunks (id INTEGER PRIMARY KEY AUTOINCREMENT, document_id TEXT NOT NULL, "
    "section_ordinal INTEGER NOT NULL, ordinal INTEGER NOT NULL, text TEXT NOT NULL, "
    "tokens TEXT NOT NULL, embedding BLOB NOT NULL)",
    "CREATE INDEX IF NOT EXISTS rag_chunks_document ON rag_chunks (document_id)",
)
RAG_CHUNKS_POSTGRES = (
    "CREATE EXTENSION IF NOT EXISTS vector",
    "CREATE TABLE rag_chunks (id BIGSERIAL PRIMARY KEY, document_id TEXT NOT NULL, "
    "section_ordinal INTEGER NOT NULL, ordinal INTEGER NOT NULL, text TEXT NOT NULL, "
    "tokens TEXT NOT NULL, embedding vector(8) NOT NULL)",
    "CREATE INDEX rag_chunks_document ON rag_chunks (document_id)",
    "CREATE INDEX rag_chunks_embedding ON rag_chunks USING hnsw (embedding vector_cosine_ops)",
)

MEMORY_SQLITE = """
CREATE TABLE IF NOT EXISTS mem_history (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS mem_history_user ON mem_history (user_id, id);
CREATE TABLE IF NOT EXISTS mem_preferences (
    user_id TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (user_id, key)
);
CREATE TABLE IF NOT EXISTS mem_memories (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT NOT NULL,
    text TEXT NOT NULL,
    norm TEXT NOT NULL,
    importance REAL NOT NULL,
    created_at REAL NOT NULL,
    last_used_at REAL NOT NULL,
    uses INTEGER NOT NULL DEFAULT 1,
    source TEXT NOT NULL,
    embedder TEXT NOT NULL,
    vector BLOB NOT NULL,
    UNIQUE (user_id, norm)
)
"""
MEMORY_POSTGRES = """
CREATE TABLE IF NOT EXISTS mem_history (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id TEXT NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS mem_history_user ON mem_history (user_id, id);
CREATE TABLE IF NOT EXISTS mem_preferences (
    user_id TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (user_id, key)
);
CREATE TABLE IF NOT EXISTS mem_memories (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id TEXT NOT NULL,
    text TEXT NOT NULL,
    norm TEXT NOT NULL,
    importance DOUBLE PRECISION NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    last_used_at DOUBLE PRECISION NOT NULL,
    uses INTEGER NOT NULL DEFAULT 1,
    source TEXT NOT NULL,
    embedder TEXT NOT NULL,
    vector BYTEA NOT NULL,
    UNIQUE (user_id, norm)
)
"""

CHECKPOINT_SQLITE = """
CREATE TABLE IF NOT EXISTS checkpoint_tasks (
    task_id TEXT PRIMARY KEY, status TEXT NOT NULL, config TEXT NOT NULL, replans INTEGER NOT NULL,
    meta TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL,
    owner TEXT, lease_until REAL
);
CREATE TABLE IF NOT EXISTS checkpoint_nodes (
    task_id TEXT NOT NULL REFERENCES checkpoint_tasks(task_id) ON DELETE CASCADE,
    node_id TEXT NOT NULL, position INTEGER NOT NULL, spec TEXT NOT NULL, status TEXT NOT NULL,
    result TEXT NOT NULL, error TEXT, attempts INTEGER NOT NULL, duration_ms REAL NOT NULL,
    PRIMARY KEY (task_id, node_id)
);
"""
CHECKPOINT_POSTGRES = """
CREATE TABLE IF NOT EXISTS checkpoint_tasks (
    task_id TEXT PRIMARY KEY, status TEXT NOT NULL, config JSONB NOT NULL, replans INTEGER NOT NULL,
    meta JSONB NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(), owner TEXT, lease_until TIMESTAMPTZ
);
CREATE TABLE IF NOT EXISTS checkpoint_nodes (
    task_id TEXT NOT NULL REFERENCES checkpoint_tasks(task_id) ON DELETE CASCADE,
    node_id TEXT NOT NULL, position INTEGER NOT NULL, spec TEXT NOT NULL, status TEXT NOT NULL,
    result TEXT NOT NULL, error TEXT, attempts INTEGER NOT NULL, duration_ms DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (task_id, node_id)
);
"""

EMBEDDER, DIM = "test-embedder", 8


def unit(i: int) -> np.ndarray[Any, Any]:
    """A distinct unit vector per i (so a search for ``unit(i)`` finds exactly row i first)."""
    v = np.zeros(DIM, dtype=np.float32)
    v[i % DIM] = 1.0
    v[(i + 3) % DIM] = 0.5 * (1 + i // DIM)
    return v / np.linalg.norm(v)


DOCS = [
    {"id": f"doc{i}", "title": title, "content": content, "chunks": chunks}
    for i, (title, content, chunks) in enumerate([
        ("北京天气", "北京今天晴，最高气温二十度。", ["北京 今天 晴", "最高 气温 二十 度"]),
        ("Tea (notes)", "Green tea [2024] costs 5% more.\nOolong too.", ["green tea 2024 costs", "oolong too"]),
        ("Empty-ish", "x", ["x"]),
    ])
]
MEMORIES = [("alice", "我喜欢喝茶", 0.7), ("alice", "I live in Paris", 0.5), ("bob", "likes 'quotes' and %s", 0.9)]
HISTORY = [("alice", "user", "你好"), ("alice", "assistant", "Hello! [1]"), ("bob", "user", "hi")]
PREFERENCES = [("alice", "city", "Paris"), ("bob", "name", "Bob")]
NODES = [  # (node_id, spec, status, result JSON, error, attempts, duration_ms)
    ("n1", {"type": "tool", "tool": "get_time", "agent": None, "goal": None, "params": {"tz": "UTC"},
            "depends_on": [], "race_group": None}, "done", {"time": "12:00"}, None, 1, 3.5),
    ("n2", {"type": "tool", "tool": "get_weather", "agent": None, "goal": None, "params": {"city": "北京"},
            "depends_on": ["n1"], "race_group": None}, "failed", None, "timeout", 3, 30000.0),
]


def fill(execute: Any, executemany: Any, *, postgres: bool) -> None:
    """Write documents, memories and checkpoints with ``?``-style statements as the old stores did."""
    mark = "%s" if postgres else "?"

    def q(sql: str) -> str:
        return sql.replace("?", mark)

    for key, value in (("embedder", EMBEDDER), ("embedding_dim", str(DIM))):
        execute(q("INSERT INTO rag_meta (key, value) VALUES (?, ?)"), (key, value))
    execute("UPDATE rag_meta SET value = '3' WHERE key = 'revision'")
    n = 0
    for d in DOCS:
        execute(q("INSERT INTO rag_documents (id, doc_key, title, source, doc_type, summary, content_hash, content, "
                  "version, indexed, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, 1, ?, ?)"),
                (d["id"], d["title"], d["title"], "", "text", "", f"hash-{d['id']}", d["content"],
                 "2026-01-01T00:00:00+00:00", "2026-01-02T00:00:00+00:00"))
        execute(q("INSERT INTO rag_sections (document_id, ordinal, text) VALUES (?, ?, ?)"), (d["id"], 0, d["content"]))
        for ordinal, tokens in enumerate(d["chunks"]):
            vector: Any = unit(n) if postgres else unit(n).tobytes()
            execute(q("INSERT INTO rag_chunks (document_id, section_ordinal, ordinal, text, tokens, embedding) "
                      "VALUES (?, ?, ?, ?, ?, ?)"), (d["id"], 0, ordinal, tokens, tokens, vector))
            n += 1
    for i, (user, text, importance) in enumerate(MEMORIES):
        execute(q("INSERT INTO mem_memories (user_id, text, norm, importance, created_at, last_used_at, uses, source, "
                  "embedder, vector) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?)"),
                (user, text, text.casefold(), importance, 100.0 + i, 200.0 + i, "rules", EMBEDDER, unit(i).tobytes()))
    for i, (user, role, content) in enumerate(HISTORY):
        execute(q("INSERT INTO mem_history (user_id, role, content, created_at) VALUES (?, ?, ?, ?)"),
                (user, role, content, 10.0 + i))
    for user, key, value in PREFERENCES:
        execute(q("INSERT INTO mem_preferences (user_id, key, value, updated_at) VALUES (?, ?, ?, ?)"),
                (user, key, value, 1.0))
    if postgres:
        execute(q("INSERT INTO checkpoint_tasks (task_id, status, config, replans, meta) VALUES (?, ?, ?, ?, ?)"),
                ("task-1", "running", json.dumps({"max_parallel": 4}), 1, json.dumps({"user_id": "alice"})))
    else:
        execute(q("INSERT INTO checkpoint_tasks (task_id, status, config, replans, meta, created_at, updated_at) "
                  "VALUES (?, ?, ?, ?, ?, ?, ?)"),
                ("task-1", "running", json.dumps({"max_parallel": 4}), 1, json.dumps({"user_id": "alice"}), 1.0, 1.0))
    executemany(q("INSERT INTO checkpoint_nodes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"),
                [("task-1", nid, i, json.dumps(spec), status, json.dumps(result), error, attempts, ms)
                 for i, (nid, spec, status, result, error, attempts, ms) in enumerate(NODES)])
