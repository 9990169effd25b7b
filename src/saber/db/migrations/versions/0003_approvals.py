"""Approvals: the questions a waiting step asked a person, and their answers (durable, so a
task can wait across a restart and be answered from another process).

Revision ID: 0003
Revises: 0002
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    real = "DOUBLE PRECISION" if bind.dialect.name == "postgresql" else "REAL"
    bind.exec_driver_sql(f"""CREATE TABLE IF NOT EXISTS saber_approvals (
        task_id TEXT NOT NULL, node_id TEXT NOT NULL, user_id TEXT NOT NULL DEFAULT '',
        tool TEXT NOT NULL, params TEXT NOT NULL, reason TEXT NOT NULL,
        status TEXT NOT NULL, decided_by TEXT NOT NULL DEFAULT '', decision_reason TEXT NOT NULL DEFAULT '',
        created_at {real} NOT NULL, decided_at {real},
        PRIMARY KEY (task_id, node_id))""")
    bind.exec_driver_sql("CREATE INDEX IF NOT EXISTS approvals_pending ON saber_approvals (status, created_at)")
