"""Checkpointed react tasks as the agent sees them: listing, claiming a new id, finding one to resume."""

from __future__ import annotations

import time
from collections.abc import Collection
from typing import Any

from saber.graph.checkpoint import Checkpoint, CheckpointStore
from saber.graph.checkpoint.base import owner_gone
from saber.plaintext import plain_line

TASK_KIND = "agent.react"
"""The ``kind`` in a react task's checkpoint metadata: what ``saber tasks`` lists and ``resume`` accepts."""

RESUMABLE = ("running", "answering", "cancelled")
"""running: the process that ran it died; answering: it died (or was cancelled) while writing the
answer, which a resume writes again; cancelled: a user stopped it."""


async def list_tasks(store: CheckpointStore | None, *, user_id: str | None, unfinished: bool) -> list[dict[str, Any]]:
    """Agent tasks (id, status, user, query, steps), oldest first; only resumable ones when ``unfinished``."""
    if store is None:
        return []
    out = []
    for task_id in await store.list_tasks():
        saved = await store.load(task_id)
        if saved is None or saved.meta.get("kind") != TASK_KIND:
            continue
        if (unfinished and saved.status not in RESUMABLE) or (user_id and saved.meta.get("user_id") != user_id):
            continue
        done = sum(1 for n in saved.nodes if n.status.finished and n.status.value != "cancelled")
        counts = {s: sum(1 for n in saved.nodes if n.status.value == s) for s in ("done", "failed", "skipped")}
        out.append({"task_id": task_id, "status": saved.status, "user_id": saved.meta.get("user_id"),
                    "query": _shown(saved.meta.get("query")), "title": task_title(saved.meta.get("query")), "nodes": len(saved.nodes), "finished": done,
                    **counts, "state": task_state(saved), "plan_truncated": saved.meta.get("plan_truncated")})
    return out


def task_state(saved: Checkpoint, now: float | None = None) -> str:
    """The status a user should see: a "running" task whose process died (its lease expired, or
    its owner is a dead process on this host) is "interrupted", and can be resumed."""
    if saved.status != "running":
        return str(saved.status)
    expired = saved.lease_until is not None and saved.lease_until <= (time.time() if now is None else now)
    return "interrupted" if expired or owner_gone(saved.owner) else "running"


LISTED_QUERY_CHARS = 300
"""A listing shows the start of a long query (the checkpoint keeps it whole, for a resume)."""


def task_title(query: Any) -> str | None:
    """The query as a reader sees it, on one line: "Research **Oslo**" is listed "Research Oslo"."""
    if not isinstance(query, str):
        return None
    title = plain_line(query) or " ".join(query.split())
    return title if len(title) <= TITLE_CHARS else title[:TITLE_CHARS] + "…"


TITLE_CHARS = 120


def _shown(query: Any) -> Any:
    if isinstance(query, str) and len(query) > LISTED_QUERY_CHARS:
        return query[:LISTED_QUERY_CHARS] + f"… ({len(query):,} characters)"
    return query


async def check_new_task_id(store: CheckpointStore | None, task_id: str, running: Collection[str]) -> None:
    """A caller-chosen id must be new: reusing one would overwrite that task's checkpoint."""
    if not task_id.strip():
        raise ValueError("task_id must not be empty")
    if task_id in running or (store is not None and await store.load(task_id) is not None):
        raise ValueError(f"task id {task_id!r} already exists: choose a new one (or resume that task)")


async def resumable_task(store: CheckpointStore | None, task_id: str, *, user_id: str | None,
                         running: Collection[str]) -> Checkpoint:
    """The checkpoint of an agent task that may be resumed now, or a ValueError saying why not."""
    saved = await store.load(task_id) if store is not None else None
    if saved is None or saved.meta.get("kind") != TASK_KIND:
        raise ValueError(f"no resumable task {task_id!r}")
    if user_id is not None and saved.meta.get("user_id") != user_id:
        raise ValueError(f"task {task_id!r} belongs to another user")
    if saved.status not in RESUMABLE:
        raise ValueError(f"task {task_id!r} already finished ({saved.status})")
    if task_id in running:
        raise ValueError(f"task {task_id} is already running")
    return saved
