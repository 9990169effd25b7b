"""The run queue of the distributed mode: every accepted request, until a worker finishes it.

Revision ID: 0004
Revises: 0003
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    real = "DOUBLE PRECISION" if bind.dialect.name == "postgresql" else "REAL"
    bind.exec_driver_sql(f"""CREATE TABLE IF NOT EXISTS saber_run_queue (
        task_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, kind TEXT NOT NULL, request TEXT NOT NULL,
        status TEXT NOT NULL, enqueued_at {real} NOT NULL, started_at {real}, finished_at {real},
        worker TEXT, lease_until {real}, attempts INTEGER NOT NULL DEFAULT 0,
        trace TEXT NOT NULL DEFAULT '')""")
    bind.exec_driver_sql("CREATE INDEX IF NOT EXISTS saber_run_queue_waiting ON saber_run_queue (status, enqueued_at)")
    bind.exec_driver_sql("CREATE INDEX IF NOT EXISTS saber_run_queue_user ON saber_run_queue (user_id, status)")
