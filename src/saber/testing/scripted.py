"""``ScriptedModel``: a ChatModel that answers from a queue, for tests.

Each queued reply is a string (the text), a ``Completion``, an exception (raised at that call)
or a function of the messages returning one of those. Every call is recorded, and
``assert_complete()`` fails when replies are left over.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from saber.llm.types import (
    Completion,
    Message,
    ResponseFormat,
    StreamChunk,
    StreamEnd,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from saber.tools.base import Tool

Reply: TypeAlias = "str | Completion | BaseException | Callable[[Sequence[Message]], str | Completion]"


@dataclass(frozen=True, kw_only=True)
class RecordedCall:
    """One call a ``ScriptedModel`` received: the messages, the tool names, the response format and
    whether it was streamed."""

    messages: list[Message]
    tools: list[str]
    response_format: ResponseFormat | None
    streamed: bool

    @property
    def prompt(self) -> str:
        """All message contents joined: handy for ``assert "..." in call.prompt``."""
        return "\n".join(m.content for m in self.messages)


class ScriptedModel:
    """A ``ChatModel`` that answers from a queue of scripted replies (text, tool calls, exceptions)
    and records every call; ``assert_complete()`` checks every reply was used. The one fake model
    for tests."""

    def __init__(self, replies: Sequence[Any] = (), *, name: str = "scripted", delay: float = 0.0) -> None:
        self.replies: list[Any] = list(replies)
        self.name = name
        self.delay = delay
        """Seconds to wait before each reply (to test cancellation and timeouts)."""
        self.calls: list[RecordedCall] = []

    def queue(self, *replies: Any) -> None:
        self.replies.extend(replies)

    def assert_complete(self) -> None:
        if self.replies:
            raise AssertionError(f"ScriptedModel {self.name!r}: {len(self.replies)} queued replies were never used: {self.replies!r}")

    async def _next(self, messages: Sequence[Message], tools: Sequence[Tool], fmt: ResponseFormat | None, streamed: bool) -> Completion:
        self.calls.append(RecordedCall(messages=list(messages), tools=[t.name for t in tools], response_format=fmt, streamed=streamed))
        if self.delay:
            await asyncio.sleep(self.delay)
        if not self.replies:
            last = next((m.content for m in reversed(messages) if m.role == "user"), "")
            raise AssertionError(f"ScriptedModel {self.name!r}: no reply queued for call #{len(self.calls)} (last user message: {last[:200]!r})")
        reply = self.replies.pop(0)
        if callable(reply) and not isinstance(reply, type):
            reply = reply(messages)
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, str):
            return Completion(text=reply, usage=_usage(messages, reply), finish_reason="stop", model=self.name)
        if isinstance(reply, Completion):
            return reply
        raise TypeError(f"ScriptedModel cannot reply with {type(reply).__name__}")

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Tool] = (),
        response_format: ResponseFormat | None = None,
        temperature: float | None = None,
    ) -> Completion:
        return await self._next(messages, tools, response_format, streamed=False)

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Tool] = (),
        temperature: float | None = None,
    ) -> AsyncIterator[StreamChunk]:
        completion = await self._next(messages, tools, None, streamed=True)
        for piece in re.findall(r"\S+\s*|\s+", completion.text):
            yield TextDelta(content=piece)
            await asyncio.sleep(0)
        for i, call in enumerate(completion.tool_calls):
            yield ToolCallDelta(index=i, id=call.id, name=call.name, arguments=json.dumps(call.arguments, ensure_ascii=False))
        yield StreamEnd(tool_calls=completion.tool_calls, usage=completion.usage, finish_reason=completion.finish_reason)


def _usage(messages: Sequence[Message], reply: str) -> Usage:
    """A rough count (characters / 4) so that usage sums are exercised in tests."""
    prompt = sum(len(m.content) for m in messages)
    return Usage(prompt_tokens=max(1, prompt // 4), completion_tokens=max(1, len(reply) // 4))
