"""The approval store's statements in SQLAlchemy Core, compiled by ``python -m saber.db.compile``
into ``queries_sql.py``, which the store runs (see ``saber.db.statements``)."""

from __future__ import annotations

import sqlalchemy as sa

from saber.db.tables import approvals as t

_p = sa.bindparam
_QUESTION = (t.c.task_id, t.c.node_id, t.c.user_id, t.c.tool, t.c.params, t.c.reason, t.c.status, t.c.decided_by,
             t.c.decision_reason, t.c.created_at)
_THIS = (t.c.task_id == _p("task_id")) & (t.c.node_id == _p("node_id"))


def _if_given(column: sa.Column[str], name: str) -> sa.ColumnElement[bool]:
    """``column = :name``, or true when the parameter is NULL (the cast gives PostgreSQL its type)."""
    return sa.cast(_p(name), sa.Text).is_(None) | (column == _p(name))


GET = sa.select(*_QUESTION).where(_THIS)

ASK = sa.insert(t).values(
    task_id=_p("task_id"), node_id=_p("node_id"), user_id=_p("user_id"), tool=_p("tool"), params=_p("params"),
    reason=_p("reason"), status="pending", decided_by="", decision_reason="", created_at=_p("created_at"))

DECIDE = sa.update(t).where(_THIS, t.c.status == "pending").values(
    status=_p("status"), decided_by=_p("decided_by"), decision_reason=_p("decision_reason"),
    decided_at=_p("decided_at"))

FORGET = sa.delete(t).where(_THIS)

APPROVE_FOR_TASK = sa.insert(t).values(
    task_id=_p("task_id"), node_id=_p("node_id"), user_id=_p("user_id"), tool=_p("tool"), params="{}",
    reason="approved for the task", status="approved", decided_by=_p("decided_by"), decision_reason="",
    created_at=_p("created_at"))

PENDING = (sa.select(*_QUESTION)
           .where(t.c.status == "pending", _if_given(t.c.task_id, "task_id"), _if_given(t.c.user_id, "user_id"))
           .order_by(t.c.created_at))
