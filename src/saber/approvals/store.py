"""The approvals table: one row per (task, node) question; a row ``*tool:<name>`` records
"approved for the rest of the task". Blocking calls, run in worker threads by the broker."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from saber.approvals import queries_sql as q
from saber.db import Database
from saber.jsonsafe import to_jsonable
from saber.redact import redact_value

TASK_WIDE = "*tool:"


@dataclass(frozen=True, kw_only=True)
class Question:
    """One approval question: the task, node, user, tool and parameters, and its answer once given."""

    task_id: str
    node_id: str
    user_id: str
    tool: str
    params: dict[str, Any]
    reason: str
    status: str
    """pending | approved | denied"""
    decided_by: str = ""
    decision_reason: str = ""
    created_at: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "node_id": self.node_id, "tool": self.tool, "params": self.params,
                "reason": self.reason, "status": self.status, "decided_by": self.decided_by,
                "decision_reason": self.decision_reason, "created_at": self.created_at}


def _row(row: Any) -> Question:
    return Question(task_id=row[0], node_id=row[1], user_id=row[2], tool=row[3], params=json.loads(row[4]),
                    reason=row[5], status=row[6], decided_by=row[7], decision_reason=row[8], created_at=row[9])


class ApprovalStore:
    """The approval questions and their answers, in the database."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def get(self, task_id: str, node_id: str) -> Question | None:
        with self.db.transaction() as tx:
            row = tx.run(q.GET, {"task_id": task_id, "node_id": node_id}).fetchone()
        return _row(row) if row else None

    def ask(self, *, task_id: str, node_id: str, user_id: str, tool: str, params: dict[str, Any], reason: str) -> Question:
        """The question for this node: the one already asked (answered or not), else a new one. Its
        params are kept and shown with their secrets redacted (the step itself runs with its own)."""
        params = redact_value(to_jsonable(params))
        with self.db.transaction(write=True, durable=True) as tx:
            row = tx.run(q.GET, {"task_id": task_id, "node_id": node_id}).fetchone()
            if row:
                return _row(row)
            now = time.time()
            tx.run(q.ASK, {"task_id": task_id, "node_id": node_id, "user_id": user_id, "tool": tool,
                           "params": json.dumps(params, ensure_ascii=False), "reason": reason, "created_at": now})
        return Question(task_id=task_id, node_id=node_id, user_id=user_id, tool=tool, params=params, reason=reason,
                        status="pending", created_at=now)

    def decide(self, task_id: str, node_id: str, *, approve: bool, by: str, reason: str = "") -> Question | None:
        """Answer a pending question; None when there is none (unknown, or answered already)."""
        this = {"task_id": task_id, "node_id": node_id}
        with self.db.transaction(write=True, durable=True) as tx:
            changed = tx.run(q.DECIDE, {**this, "status": "approved" if approve else "denied", "decided_by": by,
                                        "decision_reason": reason, "decided_at": time.time()}).rowcount
            if not changed:
                return None
            row = tx.run(q.GET, this).fetchone()
        return _row(row)

    def approve_tool_for_task(self, task_id: str, tool: str, *, user_id: str, by: str) -> None:
        this = {"task_id": task_id, "node_id": TASK_WIDE + tool}
        with self.db.transaction(write=True, durable=True) as tx:
            tx.run(q.FORGET, this)
            tx.run(q.APPROVE_FOR_TASK, {**this, "user_id": user_id, "tool": tool, "decided_by": by,
                                        "created_at": time.time()})

    def approved_for_task(self, task_id: str, tool: str) -> bool:
        return self.get(task_id, TASK_WIDE + tool) is not None

    def pending(self, *, task_id: str | None = None, user_id: str | None = None) -> list[Question]:
        with self.db.transaction() as tx:
            rows = tx.run(q.PENDING, {"task_id": task_id, "user_id": user_id}).fetchall()
        return [_row(r) for r in rows]
