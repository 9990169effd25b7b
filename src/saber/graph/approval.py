"""Approvals: a tool call that needs a person's yes waits for it before it runs.

The runtime asks the gate current in its context (``approving_with``, set per request by the
Agent, inherited by every runtime the request starts: react plans, tool mode, sub-agents). The
wait is outside the node's attempts, so it holds no parallel slot and no step timeout runs;
other branches of the graph keep going. A denial (or no answer in time) fails the node with a
non-retryable error that says so; the failure policy and the answer take it from there."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from saber.events import Event
from saber.tools.base import Tool


@dataclass(frozen=True, kw_only=True)
class Decision:
    approved: bool
    by: str
    """Who answered: a user id, ``timeout``, or ``task`` (approved earlier for the whole task)."""
    reason: str = ""


class ApprovalGate(Protocol):
    def reason_for(self, tool: Tool, args: Mapping[str, Any]) -> str | None:
        """Why this call needs approval, or None when it may run at once."""
        ...

    async def request(self, *, task_id: str, node_id: str, tool: str, params: Mapping[str, Any], reason: str,
                      emit: Callable[[Event], Awaitable[None]]) -> Decision:
        """Ask (emitting ``approval_required``), wait for the answer (emitting ``approval_given``)."""
        ...


_gate: contextvars.ContextVar[ApprovalGate | None] = contextvars.ContextVar("saber_approval_gate", default=None)


def current_gate() -> ApprovalGate | None:
    return _gate.get()


@contextlib.contextmanager
def approving_with(gate: ApprovalGate | None) -> Iterator[None]:
    token = _gate.set(gate)
    try:
        yield
    finally:
        _gate.reset(token)


def denial_message(decision: Decision) -> str:
    if decision.by == "timeout":
        return f"not approved: {decision.reason or 'no answer in time'}"
    return f"denied by the user{f': {decision.reason}' if decision.reason else ''}"
