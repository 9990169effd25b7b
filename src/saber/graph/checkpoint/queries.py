"""The checkpoint stores' statements in SQLAlchemy Core, compiled by ``python -m saber.db.compile``
into ``queries_sql.py``, which the stores run (see ``saber.db.statements``).

Most are one statement for both databases. Leases differ: on SQLite a lease time is this host's
clock, passed in as epoch seconds; on PostgreSQL it is the server's own clock (``now()``), the one
every process sharing it agrees on, and a claim locks the task's row (``FOR UPDATE``)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg
from sqlalchemy.dialects import sqlite

from saber.db.statements import PerDialect
from saber.db.tables import checkpoint_nodes as nodes
from saber.db.tables import checkpoint_tasks as tasks

_p = sa.bindparam
_TASK = tasks.c.task_id == _p("task_id")
_NODE = (nodes.c.task_id == _p("task_id")) & (nodes.c.node_id == _p("node_id"))
_STATE = ("status", "result", "error", "attempts", "duration_ms")


def _lease_from_now() -> sa.ColumnElement[Any]:
    """PostgreSQL: the server's clock plus ``:lease_seconds``."""
    return sa.func.now() + sa.func.make_interval(0, 0, 0, 0, 0, 0, _p("lease_seconds"))


def _epoch(column: sa.ColumnElement[Any]) -> sa.ColumnElement[float]:
    """A PostgreSQL timestamp as epoch seconds (what SQLite stores)."""
    return sa.cast(sa.extract("epoch", column), pg.DOUBLE_PRECISION)


LEASE = PerDialect(
    sqlite=sa.select(tasks.c.status, tasks.c.owner, tasks.c.lease_until).where(_TASK),
    postgresql=sa.select(tasks.c.status, tasks.c.owner, _epoch(tasks.c.lease_until),
                         sa.func.coalesce(tasks.c.lease_until > sa.func.now(), sa.false()))
    .where(_TASK).with_for_update(),
)
"""The task's status, owner and lease end (PostgreSQL: also whether the lease is live, by its clock)."""

_sqlite_task = sqlite.insert(tasks).values(
    task_id=_p("task_id"), status=_p("status"), config=_p("config"), replans=_p("replans"), meta=_p("meta"),
    created_at=_p("now"), updated_at=_p("now"), owner=_p("owner"), lease_until=_p("lease_until"))
_pg_task = pg.insert(tasks).values(
    task_id=_p("task_id"), status=_p("status"), config=_p("config"), replans=_p("replans"), meta=_p("meta"),
    owner=_p("owner"),
    lease_until=sa.case((sa.cast(_p("owner"), sa.Text).is_(None), sa.null()), else_=_lease_from_now()))
SAVE_TASK = PerDialect(
    sqlite=_sqlite_task.on_conflict_do_update(index_elements=[tasks.c.task_id], set_={
        name: _sqlite_task.excluded[name]
        for name in ("status", "config", "replans", "meta", "updated_at", "owner", "lease_until")}),
    postgresql=_pg_task.on_conflict_do_update(index_elements=[tasks.c.task_id], set_={
        **{name: _pg_task.excluded[name] for name in ("status", "config", "replans", "meta", "owner", "lease_until")},
        "updated_at": sa.func.now()}),
)
"""A task's row, new or replaced (its nodes are written again after it)."""

DELETE_NODES = sa.delete(nodes).where(nodes.c.task_id == _p("task_id"))

INSERT_NODE = sa.insert(nodes).values(
    task_id=_p("task_id"), node_id=_p("node_id"), position=_p("position"), spec=_p("spec"),
    **{name: _p(name) for name in _STATE})

SAVE_NODE = sa.update(nodes).where(_NODE).values(**{name: _p(name) for name in _STATE})
"""A node's state after it ran (its spec and position never change)."""

SET_REPLANS = sa.update(tasks).where(_TASK).values(replans=_p("replans"))

_keep_lease_if_running = sa.case((_p("status") == "running", tasks.c.lease_until), else_=sa.null())
SET_STATUS = PerDialect(
    sqlite=sa.update(tasks).where(_TASK).values(status=_p("status"), updated_at=_p("now"),
                                                 lease_until=_keep_lease_if_running),
    postgresql=sa.update(tasks).where(_TASK).values(status=_p("status"), updated_at=sa.func.now(),
                                                     lease_until=_keep_lease_if_running),
)
"""A task's status; a task no longer running holds no lease."""

CLAIM = PerDialect(
    sqlite=sa.update(tasks).where(_TASK).values(owner=_p("owner"), lease_until=_p("lease_until")),
    postgresql=sa.update(tasks).where(_TASK).values(owner=_p("owner"), lease_until=_lease_from_now()),
)

RENEW = PerDialect(
    sqlite=sa.update(tasks).where(_TASK, tasks.c.owner == _p("owner")).values(lease_until=_p("lease_until")),
    postgresql=sa.update(tasks).where(_TASK, tasks.c.owner == _p("owner")).values(lease_until=_lease_from_now()),
)
"""The owner's lease, extended; no row changes when another process owns the task now."""

OWNER = PerDialect(
    sqlite=sa.select(tasks.c.owner).where(_TASK),
    postgresql=sa.select(tasks.c.owner).where(_TASK).with_for_update(read=True),
)
"""Who owns the task (PostgreSQL: ``FOR SHARE``, so a claim waits for the save that asked)."""

LOAD_TASK = PerDialect(
    sqlite=sa.select(tasks.c.status, tasks.c.config, tasks.c.replans, tasks.c.meta, tasks.c.owner,
                     tasks.c.lease_until).where(_TASK),
    postgresql=sa.select(tasks.c.status, tasks.c.config, tasks.c.replans, tasks.c.meta, tasks.c.owner,
                         _epoch(tasks.c.lease_until)).where(_TASK),
)

LOAD_NODES = (sa.select(nodes.c.node_id, nodes.c.spec, *(nodes.c[name] for name in _STATE))
              .where(nodes.c.task_id == _p("task_id")).order_by(nodes.c.position))

LIST_TASKS = (sa.select(tasks.c.task_id)
              .where(sa.cast(_p("status"), sa.Text).is_(None) | (tasks.c.status == _p("status")))
              .order_by(tasks.c.created_at))
"""Every task, or those with ``:status`` (NULL for all), oldest first."""

DELETE_TASK = sa.delete(tasks).where(_TASK)
