"""Baseline: the tables of the knowledge base, memory and checkpoints as they were before
migrations existed.

Every statement is ``IF NOT EXISTS``, so a database created by an earlier Saber passes through
unchanged and is simply stamped. ``rag_chunks`` is not here: its vector column's size is that
of the configured embedder, so the knowledge base creates it when it first learns the embedder.

Revision ID: 0001
Revises:
"""

from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

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


def memory(dialect: str) -> tuple[str, ...]:
    pg = dialect == "postgresql"
    serial = "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY" if pg else "INTEGER PRIMARY KEY AUTOINCREMENT"
    real = "DOUBLE PRECISION" if pg else "REAL"
    blob = "BYTEA" if pg else "BLOB"
    return (
        f"""CREATE TABLE IF NOT EXISTS mem_history (
            id {serial}, user_id TEXT NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL,
            created_at {real} NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS mem_history_user ON mem_history (user_id, id)",
        f"""CREATE TABLE IF NOT EXISTS mem_preferences (
            user_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, updated_at {real} NOT NULL,
            PRIMARY KEY (user_id, key))""",
        f"""CREATE TABLE IF NOT EXISTS mem_memories (
            id {serial}, user_id TEXT NOT NULL, text TEXT NOT NULL, norm TEXT NOT NULL,
            importance {real} NOT NULL, created_at {real} NOT NULL, last_used_at {real} NOT NULL,
            uses INTEGER NOT NULL DEFAULT 1, source TEXT NOT NULL, embedder TEXT NOT NULL,
            vector {blob} NOT NULL, UNIQUE (user_id, norm))""",
    )


def checkpoints(dialect: str) -> tuple[str, ...]:
    if dialect == "postgresql":
        tasks = """CREATE TABLE IF NOT EXISTS checkpoint_tasks (
            task_id TEXT PRIMARY KEY, status TEXT NOT NULL, config JSONB NOT NULL, replans INTEGER NOT NULL,
            meta JSONB NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            updated_at TIMESTAMPTZ NOT NULL DEFAULT now(), owner TEXT, lease_until TIMESTAMPTZ)"""
        real = "DOUBLE PRECISION"
    else:
        tasks = """CREATE TABLE IF NOT EXISTS checkpoint_tasks (
            task_id TEXT PRIMARY KEY, status TEXT NOT NULL, config TEXT NOT NULL, replans INTEGER NOT NULL,
            meta TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL, owner TEXT, lease_until REAL)"""
        real = "REAL"
    return (
        tasks,
        f"""CREATE TABLE IF NOT EXISTS checkpoint_nodes (
            task_id TEXT NOT NULL REFERENCES checkpoint_tasks(task_id) ON DELETE CASCADE,
            node_id TEXT NOT NULL, position INTEGER NOT NULL, spec TEXT NOT NULL, status TEXT NOT NULL,
            result TEXT NOT NULL, error TEXT, attempts INTEGER NOT NULL, duration_ms {real} NOT NULL,
            PRIMARY KEY (task_id, node_id))""",
    )


def upgrade() -> None:
    bind = op.get_bind()
    dialect = bind.dialect.name
    if dialect == "postgresql":
        # pgvector serves the knowledge base; memory and checkpoints work without it.
        savepoint = bind.begin_nested()
        try:
            bind.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS vector")
        except Exception:
            savepoint.rollback()
        else:
            savepoint.commit()
    for statement in (*RAG, *memory(dialect), *checkpoints(dialect)):
        bind.exec_driver_sql(statement)
