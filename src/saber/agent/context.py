"""The state of one request: who asked what, what the agent knows, and where events go."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from saber.agent.plan_report import PlanReport
from saber.agent.prompts import Lang, context_block
from saber.agent.router import RouteDecision
from saber.events import Event
from saber.graph.node import Node
from saber.llm.base import ChatModel
from saber.llm.nomodel import is_no_model
from saber.llm.types import Message, Usage
from saber.tools.base import Tool

if TYPE_CHECKING:
    from saber.agent.services import Services

Emit = Callable[[Event], Awaitable[None]]


@dataclass(kw_only=True)
class Turn:
    """One request's own state; nothing here is shared with another request or user."""

    task_id: str
    user_id: str
    query: str
    lang: Lang
    emit: Emit
    model: ChatModel
    tools: Mapping[str, Tool]
    """The registry snapshot (filtered to the caller's selection, if any)."""
    services: Services
    preferences: dict[str, str] = field(default_factory=dict)
    history: list[Message] = field(default_factory=list)
    """Earlier turns of this user's conversation (the current query not included)."""
    memories: list[str] = field(default_factory=list)
    route: RouteDecision | None = None
    usage: Usage = field(default_factory=Usage)
    answered_by_model: bool = False
    streamed: list[str] = field(default_factory=list)
    """The answer's tokens as emitted so far (the partial answer of an interrupted request)."""
    background: list[asyncio.Task[None]] = field(default_factory=list)
    """Background work started for this request, cancelled with it."""
    tool_node: Node | None = None
    """The call tool mode decided on while routing."""
    tool_node_by_model: bool = False
    """Whether the model chose ``tool_node``'s arguments (else the rules did, from the request itself)."""
    uncalled_tools: list[str] = field(default_factory=list)
    """Tools the route chose but could not call (no arguments could be made for them): chat says so."""
    prompt_tools: list[str] | None = None
    """The tools the planner prompt listed when it left some out (preselection, or a selection among
    many); None when it listed them all."""
    selected_tools: list[str] | None = None
    """The tools the caller chose: always listed to the planner."""
    replans: int = 0
    """Model calls made to replan this turn's graph (reported in ``done``'s usage)."""
    plan_report: PlanReport = field(default_factory=PlanReport)
    """What the react plan left out (cut, refused steps): said by the plan event and the answer."""
    plan_replanned: bool = False
    """A replan added steps for what the plan left out (``plan_report.gaps``)."""
    plan_answer: str | None = None
    """The reply the model's plan wrote ahead, placeholders for its results (``ParsedPlan.answer``)."""
    answered_by_template: bool = False
    """The answer is ``plan_answer`` filled with the steps' results: no model call after the results."""

    @property
    def has_model(self) -> bool:
        return not is_no_model(self.model)

    def add_usage(self, usage: Usage) -> None:
        self.usage = self.usage + usage

    def usage_report(self) -> dict[str, int]:
        """``done``'s usage: the tokens, and how many replans asked the model."""
        return {**self.usage.to_dict(), "replans": self.replans}

    def system_prompt(self, base: Mapping[str, str]) -> str:
        extra = context_block(self.preferences, self.memories, self.lang)
        return base[self.lang] + (f"\n\n{extra}" if extra else "")

    def messages(self, base: Mapping[str, str], user_content: str, *, with_history: bool = True) -> list[Message]:
        """System prompt (with preferences and memories), the recent history, then ``user_content``."""
        out = [Message.system(self.system_prompt(base))]
        if with_history:
            out.extend(self.history)
        out.append(Message.user(user_content))
        return out


def history_messages(entries: Sequence[tuple[str, str]]) -> list[Message]:
    """(role, content) pairs from the store as chat messages; unknown roles are dropped."""
    out: list[Message] = []
    for role, content in entries:
        if role == "user":
            out.append(Message.user(content))
        elif role == "assistant":
            out.append(Message.assistant(content))
    return out
