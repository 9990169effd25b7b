"""Knowledge base: which users own which documents, beside the documents.

``rag_owners`` holds a row per (document, user) for documents uploaded through the API or written
by the agent for a user; a document without rows is shared (``saber ingest``). On a server with
API keys, a user's searches and listings see shared documents and their own, never another
user's. The rows lived in the API node's own ``server.db`` before (so one node did not know what
was uploaded through another); the server moves them here at start.

Revision ID: 0006
Revises: 0005
"""

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    bind.exec_driver_sql("CREATE TABLE IF NOT EXISTS rag_owners (document_id TEXT NOT NULL, user_id TEXT NOT NULL, "
                         "PRIMARY KEY (document_id, user_id))")
    bind.exec_driver_sql("CREATE INDEX IF NOT EXISTS rag_owners_user ON rag_owners (user_id)")


def downgrade() -> None:
    op.get_bind().exec_driver_sql("DROP TABLE IF EXISTS rag_owners")
