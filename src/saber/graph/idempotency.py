"""The idempotency key of the tool call under way: ``<task id>:<node id>``.

Execution is at least once: a process killed after a tool's side effect but before its result
was checkpointed runs that node again on resume. The key is the same for every attempt of a
node and across resumes, so a tool with side effects can use it to do them once (the knowledge
base's ``write_document`` does). It is bound by the runtime around each call, worker threads
included; outside a graph run it is None.
"""

from __future__ import annotations

import contextvars

_key: contextvars.ContextVar[str | None] = contextvars.ContextVar("saber_idempotency_key", default=None)


def idempotency_key() -> str | None:
    """The key of the node whose tool is running in this context, or None outside a graph run."""
    return _key.get()


def node_key(task_id: str, node_id: str) -> str:
    return f"{task_id}:{node_id}"


def bind(key: str | None) -> contextvars.Token[str | None]:
    """Make ``key`` current (the runtime does this per attempt); undo with ``unbind``."""
    return _key.set(key)


def unbind(token: contextvars.Token[str | None]) -> None:
    _key.reset(token)
