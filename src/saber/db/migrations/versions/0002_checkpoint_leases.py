"""Checkpoints: the lease columns (a database from before leases lacks them) and an index for
listing tasks by status (what resuming after a restart asks).

Revision ID: 0002
Revises: 0001
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        bind.exec_driver_sql("ALTER TABLE checkpoint_tasks ADD COLUMN IF NOT EXISTS owner TEXT")
        bind.exec_driver_sql("ALTER TABLE checkpoint_tasks ADD COLUMN IF NOT EXISTS lease_until TIMESTAMPTZ")
    else:
        columns = {row[1] for row in bind.exec_driver_sql("PRAGMA table_info(checkpoint_tasks)")}
        for column, kind in (("owner", "TEXT"), ("lease_until", "REAL")):
            if column not in columns:
                bind.exec_driver_sql(f"ALTER TABLE checkpoint_tasks ADD COLUMN {column} {kind}")
    bind.exec_driver_sql(
        "CREATE INDEX IF NOT EXISTS checkpoint_tasks_status ON checkpoint_tasks (status, created_at)"
    )
