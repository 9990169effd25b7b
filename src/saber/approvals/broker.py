"""``ApprovalBroker``: asks, waits and answers. The question is written to the database before
``approval_required`` is emitted, so it survives a restart; an answer given in this process wakes
the waiting step at once, one given by another process (``saber approve``, another API node) is
seen within ``poll`` seconds. No answer within ``timeout`` denies the step."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from saber.approvals.store import ApprovalStore, Question
from saber.events import ApprovalGiven, ApprovalRequired, Event
from saber.graph.approval import Decision
from saber.llm.deadline import deadline_paused
from saber.tools.base import Tool

if TYPE_CHECKING:
    from saber.config import Settings


class ApprovalBroker:
    """Asks a person before a step runs (a write, a command, a tool in ``approval_tools``): stores
    the question, emits ``approval_required``, and waits for ``decide`` (from the CLI, the API or
    the web UI) or the timeout."""

    def __init__(self, store: ApprovalStore, *, timeout: float = 600.0, always_ask: frozenset[str] = frozenset(),
                 poll: float = 0.5) -> None:
        self.store = store
        self.timeout = timeout
        self.always_ask = always_ask
        """Tools that ask before every call (``approval_tools``), besides those that ask by themselves."""
        self.poll = poll
        self._wake: dict[tuple[str, str], asyncio.Event] = {}

    @classmethod
    def from_settings(cls, settings: Settings) -> ApprovalBroker:
        from saber.db import open_database

        db = open_database(settings.database.url or settings.sqlite_path, pool_size=settings.database.pool_size)
        return cls(ApprovalStore(db), timeout=settings.approval.timeout, always_ask=frozenset(settings.approval.tools))

    def close(self) -> None:
        self.store.db.close()

    def for_user(self, user_id: str) -> UserGate:
        """The gate of one request: questions are recorded as this user's."""
        return UserGate(broker=self, user_id=user_id)

    def reason_for(self, tool: Tool, args: Mapping[str, Any]) -> str | None:
        own = tool.approval_reason(args)
        if own is not None:
            return own
        return f"{tool.name} is set to ask before it runs (approval.tools)" if tool.name in self.always_ask else None

    async def decide(self, task_id: str, node_id: str, *, approve: bool, by: str, reason: str = "",
                     for_task: bool = False) -> Question | None:
        """Answer the pending question of ``task_id``/``node_id``; None when there is none.
        ``for_task``: also approve this tool for the rest of the task."""
        question = await asyncio.to_thread(self.store.decide, task_id, node_id, approve=approve, by=by, reason=reason)
        if question is not None and approve and for_task:
            await asyncio.to_thread(self.store.approve_tool_for_task, task_id, question.tool, user_id=question.user_id, by=by)
        wake = self._wake.get((task_id, node_id))
        if wake is not None:
            wake.set()
        return question

    async def pending(self, *, task_id: str | None = None, user_id: str | None = None) -> list[Question]:
        return await asyncio.to_thread(self.store.pending, task_id=task_id, user_id=user_id)

    async def question(self, task_id: str, node_id: str) -> Question | None:
        return await asyncio.to_thread(self.store.get, task_id, node_id)

    async def request(self, *, user_id: str, task_id: str, node_id: str, tool: str, params: Mapping[str, Any],
                      reason: str, emit: Callable[[Event], Awaitable[None]]) -> Decision:
        if await asyncio.to_thread(self.store.approved_for_task, task_id, tool):
            decision = Decision(approved=True, by="task", reason=f"{tool} was approved for this task")
            await emit(ApprovalGiven(task_id=task_id, node_id=node_id, approved=True, by="task", reason=decision.reason))
            return decision
        question = await asyncio.to_thread(self.store.ask, task_id=task_id, node_id=node_id, user_id=user_id, tool=tool,
                                           params=dict(params), reason=reason)
        if question.status == "pending":
            await emit(ApprovalRequired(task_id=task_id, node_id=node_id, tool=tool, params=question.params, reason=reason))
            question = await self._wait(question)
        decision = Decision(approved=question.status == "approved", by=question.decided_by,
                            reason=question.decision_reason)
        await emit(ApprovalGiven(task_id=task_id, node_id=node_id, approved=decision.approved, by=decision.by,
                                 reason=decision.reason))
        return decision

    async def _wait(self, question: Question) -> Question:
        key = (question.task_id, question.node_id)
        wake = self._wake.setdefault(key, asyncio.Event())
        deadline = question.created_at + self.timeout
        try:
            while True:
                left = deadline - time.time()
                if left <= 0:
                    timed_out = await asyncio.to_thread(
                        self.store.decide, question.task_id, question.node_id, approve=False, by="timeout",
                        reason=f"no answer within {self.timeout:g} s")
                    if timed_out is not None:
                        return timed_out
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), timeout=max(0.0, min(self.poll, left)))
                wake.clear()
                seen = await asyncio.to_thread(self.store.get, question.task_id, question.node_id)
                if seen is not None and seen.status != "pending":
                    return seen
        finally:
            self._wake.pop(key, None)


@dataclass(frozen=True)
class UserGate:
    """``ApprovalGate`` for one user's request (see ``saber.graph.approval``)."""

    broker: ApprovalBroker
    user_id: str

    def reason_for(self, tool: Tool, args: Mapping[str, Any]) -> str | None:
        return self.broker.reason_for(tool, args)

    async def request(self, *, task_id: str, node_id: str, tool: str, params: Mapping[str, Any], reason: str,
                      emit: Callable[[Event], Awaitable[None]]) -> Decision:
        with deadline_paused():  # a person's time to answer is not the request's: approval.timeout bounds it
            return await self.broker.request(user_id=self.user_id, task_id=task_id, node_id=node_id, tool=tool,
                                             params=params, reason=reason, emit=emit)

