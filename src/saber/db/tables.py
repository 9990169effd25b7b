"""The tables the stores write, described once with SQLAlchemy Core.

The migrations (``db/migrations``) create them; the stores' Core statements (their ``queries``
modules) are written on these descriptions and compiled ahead of time (``saber.db.statements``).
``tests/integration/db/test_tables.py`` checks every table and column here against a database
migrated to the newest revision, on SQLite and on PostgreSQL, so the two cannot drift apart.
Only the build step and the tests import this module: a running store never loads SQLAlchemy for it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from saber.db.statements import PerDialect

metadata = sa.MetaData()

Real = sa.Float().with_variant(postgresql.DOUBLE_PRECISION(), "postgresql")
"""REAL on SQLite, DOUBLE PRECISION on PostgreSQL: epoch seconds and durations."""
Json = sa.Text().with_variant(postgresql.JSONB(), "postgresql")
"""JSON as text on SQLite, JSONB on PostgreSQL."""
Stamp = sa.Float().with_variant(postgresql.TIMESTAMP(timezone=True), "postgresql")
"""Epoch seconds of this host's clock on SQLite; the server's own clock on PostgreSQL."""
Blob = sa.LargeBinary()

# -- checkpoints (graph runtime) ---------------------------------------------------------------

checkpoint_tasks = sa.Table(
    "checkpoint_tasks", metadata,
    sa.Column("task_id", sa.Text, primary_key=True),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("config", Json, nullable=False),
    sa.Column("replans", sa.Integer, nullable=False),
    sa.Column("meta", Json, nullable=False),
    sa.Column("created_at", Stamp, nullable=False),
    sa.Column("updated_at", Stamp, nullable=False),
    sa.Column("owner", sa.Text),
    sa.Column("lease_until", Stamp),
)

checkpoint_nodes = sa.Table(
    "checkpoint_nodes", metadata,
    sa.Column("task_id", sa.Text, sa.ForeignKey("checkpoint_tasks.task_id", ondelete="CASCADE"), primary_key=True),
    sa.Column("node_id", sa.Text, primary_key=True),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("spec", sa.Text, nullable=False),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("result", sa.Text, nullable=False),
    sa.Column("error", sa.Text),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("duration_ms", Real, nullable=False),
)

# -- approvals ---------------------------------------------------------------------------------

approvals = sa.Table(
    "saber_approvals", metadata,
    sa.Column("task_id", sa.Text, primary_key=True),
    sa.Column("node_id", sa.Text, primary_key=True),
    sa.Column("user_id", sa.Text, nullable=False),
    sa.Column("tool", sa.Text, nullable=False),
    sa.Column("params", sa.Text, nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("decided_by", sa.Text, nullable=False),
    sa.Column("decision_reason", sa.Text, nullable=False),
    sa.Column("created_at", Real, nullable=False),
    sa.Column("decided_at", Real),
)

# -- knowledge base (rag) ----------------------------------------------------------------------

rag_meta = sa.Table(
    "rag_meta", metadata,
    sa.Column("key", sa.Text, primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

rag_documents = sa.Table(
    "rag_documents", metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("doc_key", sa.Text, nullable=False, unique=True),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("source", sa.Text, nullable=False),
    sa.Column("doc_type", sa.Text, nullable=False),
    sa.Column("summary", sa.Text, nullable=False),
    sa.Column("content_hash", sa.Text, nullable=False, unique=True),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("indexed", sa.Integer, nullable=False),
    sa.Column("created_at", sa.Text, nullable=False),
    sa.Column("updated_at", sa.Text, nullable=False),
)

rag_document_versions = sa.Table(
    "rag_document_versions", metadata,
    sa.Column("document_id", sa.Text, primary_key=True),
    sa.Column("version", sa.Integer, primary_key=True),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("content_hash", sa.Text, nullable=False),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("created_at", sa.Text, nullable=False),
)

rag_sections = sa.Table(
    "rag_sections", metadata,
    sa.Column("document_id", sa.Text, primary_key=True),
    sa.Column("ordinal", sa.Integer, primary_key=True),
    sa.Column("text", sa.Text, nullable=False),
)

rag_chunks = sa.Table(
    "rag_chunks", metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True),
    sa.Column("document_id", sa.Text, nullable=False),
    sa.Column("section_ordinal", sa.Integer, nullable=False),
    sa.Column("ordinal", sa.Integer, nullable=False),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("tokens", sa.Text, nullable=False),
    sa.Column("embedding", Blob),
    sa.Column("heading", sa.Text, nullable=False),
    sa.Column("rev", sa.BigInteger, nullable=False),
    info={"made_by": "the knowledge store, when it learns its embedder (a pgvector column is sized for it)"},
)
"""Created by the knowledge store, not a migration; ``embedding`` is ``vector(dim)`` on PostgreSQL."""

rag_chunk_removals = sa.Table(
    "rag_chunk_removals", metadata,
    sa.Column("rev", sa.BigInteger, nullable=False),
    sa.Column("chunk_id", sa.BigInteger, nullable=False),
)

rag_embed_claims = sa.Table(
    "rag_embed_claims", metadata,
    sa.Column("chunk_id", sa.Integer, primary_key=True),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("until", Real, nullable=False),
    info={"dialects": ("sqlite",)},
)
"""SQLite's vector fillers' claims (PostgreSQL's lock the rows they claim instead)."""

rag_owners = sa.Table(
    "rag_owners", metadata,
    sa.Column("document_id", sa.Text, primary_key=True),
    sa.Column("user_id", sa.Text, primary_key=True),
)

# -- memory (agent) ----------------------------------------------------------------------------

mem_history = sa.Table(
    "mem_history", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("user_id", sa.Text, nullable=False),
    sa.Column("role", sa.Text, nullable=False),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("created_at", Real, nullable=False),
)

mem_preferences = sa.Table(
    "mem_preferences", metadata,
    sa.Column("user_id", sa.Text, primary_key=True),
    sa.Column("key", sa.Text, primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
    sa.Column("updated_at", Real, nullable=False),
)

mem_memories = sa.Table(
    "mem_memories", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("user_id", sa.Text, nullable=False),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("norm", sa.Text, nullable=False),
    sa.Column("importance", Real, nullable=False),
    sa.Column("created_at", Real, nullable=False),
    sa.Column("last_used_at", Real, nullable=False),
    sa.Column("uses", sa.Integer, nullable=False),
    sa.Column("source", sa.Text, nullable=False),
    sa.Column("embedder", sa.Text, nullable=False),
    sa.Column("vector", Blob, nullable=False),
)

# -- run queue (cluster) -----------------------------------------------------------------------
# PostgreSQL only (migration 0008). procrastinate owns its tables: described are the columns the
# queue reads (``partial``), checked to exist with their NULL rules, not all its columns.

_PG_ONLY = {"dialects": ("postgresql",)}

runs = sa.Table(
    "saber_runs", metadata,
    sa.Column("task_id", sa.Text, primary_key=True),
    sa.Column("user_id", sa.Text, nullable=False),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("request", sa.Text, nullable=False),
    sa.Column("enqueued_at", Real, nullable=False),
    sa.Column("started_at", Real),
    sa.Column("finished_at", Real),
    sa.Column("worker", sa.Text),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("trace", sa.Text, nullable=False),
    sa.Column("error", sa.Text),
    sa.Column("outcome", sa.Text),
    sa.Column("recovering", sa.Boolean, nullable=False),
    sa.Column("job_id", sa.BigInteger),
    info=_PG_ONLY,
)

procrastinate_workers = sa.Table(
    "procrastinate_workers", metadata,
    sa.Column("id", sa.BigInteger, primary_key=True),
    sa.Column("last_heartbeat", postgresql.TIMESTAMP(timezone=True), nullable=False),
    info={**_PG_ONLY, "partial": True},
)

procrastinate_jobs = sa.Table(
    "procrastinate_jobs", metadata,
    sa.Column("id", sa.BigInteger, primary_key=True),
    sa.Column("queue_name", sa.String(128), nullable=False),
    sa.Column("task_name", sa.String(128), nullable=False),
    sa.Column("status", postgresql.ENUM("todo", "doing", "succeeded", "failed", "cancelled", "aborting", "aborted",
                                        name="procrastinate_job_status", create_type=False), nullable=False),
    sa.Column("scheduled_at", postgresql.TIMESTAMP(timezone=True)),
    sa.Column("abort_requested", sa.Boolean, nullable=False),
    sa.Column("worker_id", sa.BigInteger, sa.ForeignKey("procrastinate_workers.id")),
    info={**_PG_ONLY, "partial": True},
)


def with_each_insert(build: Callable[[Any], Any]) -> PerDialect:
    """``build(insert)`` with SQLite's and with PostgreSQL's own ``insert``: an upsert's
    ``on_conflict_do_*`` exists only on the dialects' insert constructs."""
    return PerDialect(sqlite=build(sqlite.insert), postgresql=build(postgresql.insert))
