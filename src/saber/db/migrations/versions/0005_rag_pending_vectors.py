"""Knowledge base: chunks stored before their vectors, and a change log for keyword indexes.

- ``rag_chunks.embedding`` may be NULL: a chunk is keyword-searchable as soon as it is written,
  and a vector filler embeds it later (``heading`` keeps the document title and section headings
  the chunk is embedded with, so a later process can embed it without re-chunking).
- ``rag_chunks.rev`` is the knowledge-base revision that wrote the chunk, and
  ``rag_chunk_removals`` the chunks removed at each revision: a process's keyword index applies
  only what changed since the revision it holds, instead of reading every chunk's tokens.
- ``rag_embed_claims`` (SQLite): the pending chunks a filler is embedding (its process id, a
  lease), so two processes on one file do not embed the same chunk.
- ``rag_meta`` gains ``vectors`` (bumped when vectors are written, for caches of the vectors) and
  ``removals_floor`` (removals older than it are pruned: an index older than that reloads).

``rag_chunks`` is created by the knowledge base once it knows the embedder (its vector column is
sized for it), so it may not exist yet; when it does, it is altered here. SQLite cannot drop a
NOT NULL constraint, so there the table is rebuilt (same ids, same rows, the same next id).

Revision ID: 0005
Revises: 0004
"""

from typing import Any

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_SQLITE_CHUNKS = (
    "CREATE TABLE rag_chunks_new (id INTEGER PRIMARY KEY AUTOINCREMENT, document_id TEXT NOT NULL, "
    "section_ordinal INTEGER NOT NULL, ordinal INTEGER NOT NULL, text TEXT NOT NULL, tokens TEXT NOT NULL, "
    "embedding BLOB, heading TEXT NOT NULL DEFAULT '', rev INTEGER NOT NULL DEFAULT 0)"
)


def _has_chunks(bind: Any, pg: bool) -> bool:
    if pg:
        return bool(bind.exec_driver_sql("SELECT to_regclass('rag_chunks') IS NOT NULL").scalar())
    row = bind.exec_driver_sql("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'rag_chunks'").first()
    return row is not None


def _alter_postgres(bind: Any) -> None:
    bind.exec_driver_sql("ALTER TABLE rag_chunks ALTER COLUMN embedding DROP NOT NULL")
    bind.exec_driver_sql("ALTER TABLE rag_chunks ADD COLUMN IF NOT EXISTS heading TEXT NOT NULL DEFAULT ''")
    bind.exec_driver_sql("ALTER TABLE rag_chunks ADD COLUMN IF NOT EXISTS rev BIGINT NOT NULL DEFAULT 0")


def _rebuild_sqlite(bind: Any) -> None:
    columns = {row[1] for row in bind.exec_driver_sql("PRAGMA table_info(rag_chunks)")}
    if "rev" in columns:
        return
    bind.exec_driver_sql(_SQLITE_CHUNKS)
    bind.exec_driver_sql(
        "INSERT INTO rag_chunks_new (id, document_id, section_ordinal, ordinal, text, tokens, embedding) "
        "SELECT id, document_id, section_ordinal, ordinal, text, tokens, embedding FROM rag_chunks"
    )
    issued = bind.exec_driver_sql("SELECT seq FROM sqlite_sequence WHERE name = 'rag_chunks'").scalar()
    bind.exec_driver_sql("DROP TABLE rag_chunks")
    bind.exec_driver_sql("ALTER TABLE rag_chunks_new RENAME TO rag_chunks")
    if issued is not None:  # ids are never reused: a filler's claim must not match a newer chunk
        bind.exec_driver_sql("UPDATE sqlite_sequence SET seq = MAX(seq, ?) WHERE name = 'rag_chunks'", (int(issued),))
    bind.exec_driver_sql("CREATE INDEX IF NOT EXISTS rag_chunks_document ON rag_chunks (document_id)")


def upgrade() -> None:
    bind = op.get_bind()
    pg = bind.dialect.name == "postgresql"
    integer = "BIGINT" if pg else "INTEGER"
    for key in ("vectors", "removals_floor"):
        bind.exec_driver_sql(
            f"INSERT INTO rag_meta (key, value) SELECT '{key}', '0' WHERE NOT EXISTS "
            f"(SELECT 1 FROM rag_meta WHERE key = '{key}')"
        )
    bind.exec_driver_sql(f"CREATE TABLE IF NOT EXISTS rag_chunk_removals (rev {integer} NOT NULL, chunk_id {integer} NOT NULL)")
    bind.exec_driver_sql("CREATE INDEX IF NOT EXISTS rag_chunk_removals_rev ON rag_chunk_removals (rev)")
    if not pg:  # PostgreSQL fillers lock the rows they claim instead
        bind.exec_driver_sql("CREATE TABLE IF NOT EXISTS rag_embed_claims (chunk_id INTEGER PRIMARY KEY, "
                             "pid INTEGER NOT NULL, until REAL NOT NULL)")
    if not _has_chunks(bind, pg):
        return
    if pg:
        _alter_postgres(bind)
    else:
        _rebuild_sqlite(bind)
    bind.exec_driver_sql("CREATE INDEX IF NOT EXISTS rag_chunks_rev ON rag_chunks (rev)")
    bind.exec_driver_sql("CREATE INDEX IF NOT EXISTS rag_chunks_pending ON rag_chunks (id) WHERE embedding IS NULL")
