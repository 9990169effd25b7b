"""The run queue on procrastinate: its schema, and ``saber_runs``, the record of every run.

procrastinate's own schema (its tables, functions and triggers, as the installed version ships
them: ``SchemaManager.get_schema()``) is applied here, in the same transaction as the rest of the
upgrade, so ``saber db upgrade`` and a process's first start create it. ``saber_runs`` holds
what the API reports of a run (its user, kind, request, how it ended and why a failed one
failed); the procrastinate job is its place in the queue.

The runs of ``saber_run_queue`` (migration 0004) move over: open ones become procrastinate jobs,
finished ones keep their record. The old table stays (migrations only add), its moved rows
marked ``moved`` so that a worker of the previous version still running takes none of them.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":  # the distributed mode needs PostgreSQL; SQLite runs requests in-process
        return
    try:
        from procrastinate.schema import SchemaManager
    except ImportError:
        raise RuntimeError("a PostgreSQL database needs the postgres extra (procrastinate, for the run queue): "
                           "pip install 'saber[postgres]'") from None

    tables = set(sa.inspect(bind).get_table_names())
    if "procrastinate_jobs" not in tables:
        bind.connection.driver_connection.execute(SchemaManager.get_schema())  # type: ignore[union-attr]
    bind.exec_driver_sql("""CREATE TABLE IF NOT EXISTS saber_runs (
        task_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, kind TEXT NOT NULL, request TEXT NOT NULL,
        enqueued_at DOUBLE PRECISION NOT NULL, started_at DOUBLE PRECISION, finished_at DOUBLE PRECISION,
        worker TEXT, attempts INTEGER NOT NULL DEFAULT 0, trace TEXT NOT NULL DEFAULT '', error TEXT,
        outcome TEXT, recovering BOOLEAN NOT NULL DEFAULT FALSE, job_id BIGINT)""")
    bind.exec_driver_sql("CREATE INDEX IF NOT EXISTS saber_runs_job ON saber_runs (job_id)")
    if "saber_run_queue" not in tables:
        return
    bind.exec_driver_sql("""INSERT INTO saber_runs (task_id, user_id, kind, request, enqueued_at, started_at,
        finished_at, worker, attempts, trace, error, outcome)
        SELECT task_id, user_id, kind, request, enqueued_at, started_at, finished_at, worker, attempts, trace, error,
               status
        FROM saber_run_queue WHERE status IN ('done', 'cancelled', 'failed') ON CONFLICT (task_id) DO NOTHING""")
    bind.exec_driver_sql("""WITH moved AS (
        INSERT INTO procrastinate_jobs (queue_name, task_name, lock, queueing_lock, args)
        SELECT 'saber:' || left(encode(sha256(convert_to(user_id, 'UTF8')), 'hex'), 32), 'saber.run', task_id,
               task_id, jsonb_build_object('task_id', task_id)
        FROM saber_run_queue WHERE status IN ('queued', 'running') RETURNING id, lock)
        INSERT INTO saber_runs (task_id, user_id, kind, request, enqueued_at, attempts, trace, job_id, recovering)
        SELECT q.task_id, q.user_id, q.kind, q.request, q.enqueued_at, q.attempts, q.trace, moved.id, q.attempts > 0
        FROM saber_run_queue q JOIN moved ON moved.lock = q.task_id ON CONFLICT (task_id) DO NOTHING""")
    bind.exec_driver_sql("UPDATE saber_run_queue SET status = 'moved', lease_until = NULL WHERE status IN ('queued', 'running')")
