"""The run queue keeps why a run failed (a malformed request, or too many failed attempts).

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    columns = {c["name"] for c in sa.inspect(bind).get_columns("saber_run_queue")}
    if "error" not in columns:
        bind.exec_driver_sql("ALTER TABLE saber_run_queue ADD COLUMN error TEXT")
