"""``ChatModel``: the one interface every language model implements.

``complete`` returns a whole completion; ``stream`` yields text and tool-call deltas and ends with
a ``StreamEnd``. Providers keep auth and transport; retries, fallbacks and tracing are wrappers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol, runtime_checkable

from saber.llm.types import Completion, Message, ResponseFormat, StreamChunk
from saber.tools.base import Tool


class ModelError(Exception):
    """A model call that failed. ``retryable`` for rate limits, 5xx, timeouts and dropped connections."""

    def __init__(self, message: str, *, retryable: bool = False, status: int | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status


@runtime_checkable
class ChatModel(Protocol):
    """The one interface to a language model: ``complete`` returns a whole ``Completion``,
    ``stream`` yields ``StreamChunk``s. Implement both (or wrap an existing model) to plug in a
    provider; ``OpenAIChatModel`` covers every OpenAI-compatible endpoint, ``ScriptedModel`` tests."""

    name: str
    """A label for events and logs, e.g. ``"openai:gpt-4o-mini"``."""

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Tool] = (),
        response_format: ResponseFormat | None = None,
        temperature: float | None = None,
    ) -> Completion: ...

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Tool] = (),
        temperature: float | None = None,
    ) -> AsyncIterator[StreamChunk]: ...
