"""``GuardedModel``: every model call bounded, every failure a ``ModelError``.

A wrapper around any ``ChatModel`` (a custom one included) that the agent puts around its model:

- ``max_tokens`` for the call's purpose goes to the model when its methods take it;
- a call takes at most ``timeout`` seconds in total — a stream too, however fast it keeps
  producing — and at most what the request has left (``request_deadline``);
- a stream that produces no visible text for ``stall`` seconds, passes ``max_tokens`` (counted in
  characters, for endpoints that ignore the parameter) or falls into a repetition loop is cut:
  it ends with a ``StreamEnd`` whose ``cut`` says why;
- any exception other than cancellation (``ValueError``, ``TimeoutError``,
  ``ConnectionResetError`` … from a custom model) becomes a ``ModelError``, so every caller's
  fallback to the rules applies.

The purpose is the one given to ``for_purpose``; otherwise a stream is an answer, a completion
with tools picks tool arguments, and any other completion is a plan.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence

from saber.llm.base import ChatModel, ModelError
from saber.llm.deadline import time_left
from saber.llm.degeneration import looks_structured, repetition
from saber.llm.limits import DEFAULT_MAX_TOKENS, GenerationLimits, Purpose, max_tokens_kwarg
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

_CHECK_EVERY = 48
"""Characters of new text between two repetition checks."""
_TAIL = 2000
_HEAD = 4000
_STRUCTURED: frozenset[Purpose] = frozenset({"planner", "tool_arguments"})
"""Purposes whose output is data: the repetition check does not fold digits (see ``degeneration``)."""
_WHAT: dict[Purpose, str] = {"planner": "plan", "tool_arguments": "tool call", "extraction": "extraction"}


class GuardedModel:
    def __init__(
        self,
        model: ChatModel,
        limits: Mapping[Purpose, GenerationLimits] | None = None,
        *,
        purpose: Purpose | None = None,
    ) -> None:
        self.wrapped = model
        self.name = model.name
        self.limits: dict[Purpose, GenerationLimits] = dict(limits or {})
        self.purpose = purpose

    def for_purpose(self, purpose: Purpose) -> GuardedModel:
        """The same model with ``purpose``'s limits on every call."""
        return GuardedModel(self.wrapped, self.limits, purpose=purpose)

    async def aclose(self) -> None:
        aclose = getattr(self.wrapped, "aclose", None)
        if aclose is not None:
            await aclose()

    def _limits(self, inferred: Purpose) -> tuple[Purpose, GenerationLimits]:
        purpose = self.purpose or inferred
        limits = self.limits.get(purpose) or GenerationLimits(max_tokens=DEFAULT_MAX_TOKENS[purpose])
        return purpose, limits.within(time_left())

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Tool] = (),
        response_format: ResponseFormat | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        purpose, limits = self._limits("tool_arguments" if tools else "planner")
        extra = max_tokens_kwarg(self.wrapped.complete, max_tokens or limits.max_tokens)
        if limits.timeout <= 0:
            raise ModelError(f"model {self.name}: no time left in the request for the {purpose} call")
        try:
            async with asyncio.timeout(limits.timeout) as scope:
                return await self.wrapped.complete(
                    messages, tools=tools, response_format=response_format, temperature=temperature, **extra
                )
        except ModelError:
            raise
        except TimeoutError as exc:
            if scope.expired():
                raise ModelError(f"model {self.name} gave no {purpose} answer within {limits.timeout:.3g}s") from exc
            raise as_model_error(self.name, exc) from exc
        except Exception as exc:
            raise as_model_error(self.name, exc) from exc

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Tool] = (),
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> AsyncIterator[StreamChunk]:
        purpose, limits = self._limits("answer")
        if max_tokens:
            limits = GenerationLimits(max_tokens=max_tokens, timeout=limits.timeout, stall=limits.stall)
        extra = max_tokens_kwarg(self.wrapped.stream, limits.max_tokens)
        if limits.timeout <= 0:
            raise ModelError(f"model {self.name}: no time left in the request for an answer")
        try:
            inner = self.wrapped.stream(messages, tools=tools, temperature=temperature, **extra)
        except ModelError:
            raise
        except Exception as exc:
            raise as_model_error(self.name, exc) from exc
        watch = _Watch(self.name, limits, asyncio.get_running_loop().time(),
                       structured=True if purpose in _STRUCTURED else None, what=_WHAT.get(purpose, "answer"))
        try:
            while True:
                chunk = await watch.next(inner)
                if chunk is None:
                    break
                if isinstance(chunk, StreamEnd):
                    watch.ended = True
                    yield chunk
                    continue
                cut = watch.see(chunk)
                yield chunk
                if cut is not None:
                    break
        finally:
            await _aclose(inner)
        if not watch.ended:
            yield StreamEnd(usage=Usage(), finish_reason="cut" if watch.cut else None, cut=watch.cut)


class _Watch:
    """The state of one guarded stream: how much text, when it last moved, and whether it is cut."""

    def __init__(self, name: str, limits: GenerationLimits, start: float, *, structured: bool | None = None,
                 what: str = "answer") -> None:
        self.name = name
        self.what = what
        """What the stream is, in words ("answer", "plan"…), for the reason of a cut."""
        self.structured = structured
        """True for a plan or tool arguments; None: decided by the text (JSON or not)."""
        self.limits = limits
        self.end = start + limits.timeout
        self.moved = start
        self.tail = ""
        """The end of the text so far, enough for the repetition check."""
        self.head = ""
        """The start of the text (whether it is JSON)."""
        self.chars = 0
        self.checked = 0
        self.cut: str | None = None
        self.ended = False

    async def next(self, inner: AsyncIterator[StreamChunk]) -> StreamChunk | None:
        """The next chunk; None when the stream is over or has been cut (``self.cut`` says why)."""
        if self.cut is not None:
            return None
        loop = asyncio.get_running_loop()
        now = loop.time()
        stalled_at = self.moved + self.limits.stall
        wait = min(self.end, stalled_at) - now
        try:
            if wait <= 0:
                raise TimeoutError
            async with asyncio.timeout(wait) as scope:
                return await anext(inner)
        except StopAsyncIteration:
            return None
        except ModelError:
            raise
        except TimeoutError as exc:
            if wait > 0 and not scope.expired():
                raise as_model_error(self.name, exc) from exc
            self._timed_out(stalled_at < self.end)
            return None
        except Exception as exc:
            raise as_model_error(self.name, exc) from exc

    def _timed_out(self, stalled: bool) -> None:
        limit = self.limits.stall if stalled else self.limits.timeout
        what = "stopped making progress" if stalled else "was still going"
        if not self.chars:
            raise ModelError(f"model {self.name} produced no text within {limit:.3g}s")
        self.cut = f"the model {what} after {limit:.3g}s"
        return None

    def see(self, chunk: StreamChunk) -> str | None:
        """Count ``chunk``; returns why the stream must be cut now, if it must."""
        piece = chunk.content if isinstance(chunk, TextDelta) else chunk.arguments if isinstance(chunk, ToolCallDelta) else ""
        if not piece:
            return None
        self.chars += len(piece)
        if piece.strip():
            self.moved = asyncio.get_running_loop().time()
        if isinstance(chunk, TextDelta):
            self.tail = (self.tail + piece)[-_TAIL:]
            if len(self.head) < _HEAD:
                self.head += piece[:_HEAD - len(self.head)]
        if self.chars - self.checked >= _CHECK_EVERY:
            self.checked = self.chars
            structured = self.structured if self.structured is not None else looks_structured(self.head)
            self.cut = repetition(self.tail, structured=structured)
        if self.cut is None and self.chars > self.limits.max_chars:
            self.cut = f"the {self.what} passed the limit of {self.limits.max_tokens} tokens"
        return self.cut


def as_model_error(name: str, exc: BaseException) -> ModelError:
    """Any exception from a model as a one-line ``ModelError`` naming the model and the exception type."""
    detail = " ".join(str(exc).split())[:300]
    retryable = isinstance(exc, (TimeoutError, ConnectionError))
    return ModelError(f"model {name} failed: {type(exc).__name__}{': ' + detail if detail else ''}", retryable=retryable)


async def _aclose(iterator: AsyncIterator[StreamChunk]) -> None:
    aclose = getattr(iterator, "aclose", None)
    if aclose is None:
        return
    with contextlib.suppress(Exception):
        await aclose()
