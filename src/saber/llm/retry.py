"""``RetryingModel``: retries retryable ``ModelError``s with exponential backoff and jitter.

A wrapper, not a subclass: it takes any ``ChatModel``. A stream is retried only while nothing has
been yielded yet — once tokens have reached the caller, a retry would repeat them. Cancellation is
never swallowed: ``CancelledError`` is not a ``ModelError`` and the backoff is a plain
``asyncio.sleep``, so ``task.cancel()`` ends the wait at once.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from saber.llm.base import ChatModel, ModelError
from saber.llm.limits import max_tokens_kwarg
from saber.llm.types import Completion, Message, ResponseFormat, StreamChunk
from saber.tools.base import Tool

Sleep = Callable[[float], Awaitable[object]]


class RetryingModel:
    """Wraps a ``ChatModel`` and retries calls that failed with a retryable ``ModelError``
    (timeouts, 429, 5xx) with exponential backoff; a stream is retried only before its first chunk."""

    def __init__(
        self,
        model: ChatModel,
        *,
        max_attempts: int = 3,
        base_delay: float = 0.5,
        max_delay: float = 8.0,
        jitter: float = 0.5,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        """``max_attempts`` counts the first try; the n-th retry waits about
        ``base_delay * 2**(n-1)`` seconds (capped at ``max_delay``), less up to ``jitter`` of it."""
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
        if not 0.0 <= jitter <= 1.0:
            raise ValueError(f"jitter must be between 0 and 1, got {jitter}")
        self.wrapped = model
        self.name = model.name
        self.max_attempts = max_attempts
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.jitter = jitter
        self._sleep = sleep

    async def aclose(self) -> None:
        """Close the wrapped model's connections, if it holds any."""
        aclose = getattr(self.wrapped, "aclose", None)
        if aclose is not None:
            await aclose()

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (1-based): the project's one exponential
        curve (``saber.outages.backoff``), less up to ``jitter`` of it at random."""
        from saber.outages import backoff  # stamina loads only when a call is retried

        full = backoff(retry, initial=self.base_delay, maximum=self.max_delay)
        return full * (1.0 - self.jitter * random.random())

    def _should_retry(self, exc: ModelError, attempt: int) -> bool:
        return exc.retryable and attempt < self.max_attempts

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Tool] = (),
        response_format: ResponseFormat | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        extra = max_tokens_kwarg(self.wrapped.complete, max_tokens)
        attempt = 1
        while True:
            try:
                return await self.wrapped.complete(
                    messages, tools=tools, response_format=response_format, temperature=temperature, **extra
                )
            except ModelError as exc:
                if not self._should_retry(exc, attempt):
                    raise
            await self._sleep(self.delay(attempt))
            attempt += 1

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Tool] = (),
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> AsyncIterator[StreamChunk]:
        extra = max_tokens_kwarg(self.wrapped.stream, max_tokens)
        attempt = 1
        while True:
            yielded = False
            inner = self.wrapped.stream(messages, tools=tools, temperature=temperature, **extra)
            try:
                async for chunk in inner:
                    yielded = True
                    yield chunk
                return
            except ModelError as exc:
                if yielded or not self._should_retry(exc, attempt):
                    raise
            finally:
                await _aclose(inner)
            await self._sleep(self.delay(attempt))
            attempt += 1


async def _aclose(iterator: AsyncIterator[StreamChunk]) -> None:
    """Close an async generator now rather than whenever it is garbage-collected."""
    aclose = getattr(iterator, "aclose", None)
    if aclose is not None:
        await aclose()
