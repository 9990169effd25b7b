"""RetryingModel: backoff on retryable errors, no retry after a stream yielded, prompt cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import pytest

from saber.llm import Completion, Message, ModelError, RetryingModel, StreamChunk, StreamEnd, TextDelta
from saber.testing import ScriptedModel
from saber.tools import Tool

MESSAGES = [Message.user("hi")]


class SleepRecorder:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def busy() -> ModelError:
    return ModelError("endpoint is rate limiting: 429", retryable=True, status=429)


async def collect(stream: AsyncIterator[StreamChunk]) -> list[StreamChunk]:
    return [chunk async for chunk in stream]


async def test_complete_retries_retryable_errors_with_growing_backoff() -> None:
    inner = ScriptedModel([busy(), busy(), "finally"])
    sleep = SleepRecorder()
    model = RetryingModel(inner, max_attempts=3, base_delay=0.5, jitter=0.0, sleep=sleep)
    result = await model.complete(MESSAGES)
    assert result.text == "finally"
    assert len(inner.calls) == 3
    assert sleep.delays == [0.5, 1.0]
    inner.assert_complete()


async def test_non_retryable_error_is_raised_at_once() -> None:
    error = ModelError("model endpoint refused: 401 invalid api key", retryable=False, status=401)
    inner = ScriptedModel([error, "never used"])
    sleep = SleepRecorder()
    with pytest.raises(ModelError) as caught:
        await RetryingModel(inner, max_attempts=5, sleep=sleep).complete(MESSAGES)
    assert caught.value is error
    assert len(inner.calls) == 1
    assert sleep.delays == []


async def test_gives_up_after_max_attempts_with_the_last_error() -> None:
    errors = [busy() for _ in range(3)]
    inner = ScriptedModel(errors)
    with pytest.raises(ModelError) as caught:
        await RetryingModel(inner, max_attempts=3, sleep=SleepRecorder()).complete(MESSAGES)
    assert caught.value is errors[-1]
    assert len(inner.calls) == 3


async def test_single_attempt_means_no_retry() -> None:
    inner = ScriptedModel([busy(), "unused"])
    with pytest.raises(ModelError):
        await RetryingModel(inner, max_attempts=1, sleep=SleepRecorder()).complete(MESSAGES)
    assert len(inner.calls) == 1


def test_backoff_is_capped_and_jitter_stays_in_bounds() -> None:
    model = RetryingModel(ScriptedModel(), base_delay=0.25, max_delay=2.0, jitter=0.5)
    for retry in range(1, 12):
        full = min(2.0, 0.25 * 2 ** (retry - 1))
        for _ in range(20):
            assert full * 0.5 <= model.delay(retry) <= full


@pytest.mark.parametrize("kwargs", [{"max_attempts": 0}, {"jitter": 1.5}])
def test_bad_configuration_is_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RetryingModel(ScriptedModel(), **kwargs)  # type: ignore[arg-type]


async def test_stream_is_retried_while_nothing_was_yielded() -> None:
    inner = ScriptedModel([busy(), "hello world"])
    sleep = SleepRecorder()
    chunks = await collect(RetryingModel(inner, sleep=sleep).stream(MESSAGES))
    assert "".join(c.content for c in chunks if isinstance(c, TextDelta)) == "hello world"
    assert isinstance(chunks[-1], StreamEnd)
    assert len(inner.calls) == 2 and len(sleep.delays) == 1


class FailsMidStream:
    """Yields one token, then fails with a retryable error; counts calls and closes."""

    name = "fails-mid-stream"

    def __init__(self) -> None:
        self.calls = 0
        self.closed = 0

    async def complete(self, messages: Sequence[Message], *, tools: Sequence[Tool] = (),
                       response_format: object = None, temperature: float | None = None) -> Completion:
        raise NotImplementedError

    async def stream(self, messages: Sequence[Message], *, tools: Sequence[Tool] = (),
                     temperature: float | None = None) -> AsyncIterator[StreamChunk]:
        self.calls += 1
        try:
            yield TextDelta(content="partial ")
            raise busy()
        finally:
            self.closed += 1


async def test_stream_is_not_retried_after_a_chunk_was_yielded() -> None:
    inner = FailsMidStream()
    sleep = SleepRecorder()
    received: list[StreamChunk] = []
    with pytest.raises(ModelError):
        async for chunk in RetryingModel(inner, max_attempts=5, sleep=sleep).stream(MESSAGES):  # type: ignore[arg-type]
            received.append(chunk)
    assert received == [TextDelta(content="partial ")]
    assert inner.calls == 1 and sleep.delays == []
    assert inner.closed == 1


async def test_cancellation_during_backoff_propagates() -> None:
    entered_backoff = asyncio.Event()

    async def slow_sleep(seconds: float) -> None:
        entered_backoff.set()
        await asyncio.sleep(3600)

    inner = ScriptedModel([busy(), "never reached"])
    task = asyncio.create_task(RetryingModel(inner, sleep=slow_sleep).complete(MESSAGES))
    await entered_backoff.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()
    assert len(inner.calls) == 1


async def test_cancellation_with_the_default_sleep_propagates() -> None:
    called = asyncio.Event()

    def fail(_: Sequence[Message]) -> str:
        called.set()
        raise busy()

    inner = ScriptedModel([fail, "never reached"])
    task = asyncio.create_task(RetryingModel(inner, base_delay=3600, jitter=0.0).complete(MESSAGES))
    await called.wait()
    await asyncio.sleep(0)  # let the task reach its backoff sleep
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()


class HangsAfterFirstToken:
    name = "hangs"

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.closed = asyncio.Event()

    async def complete(self, *args: object, **kwargs: object) -> Completion:
        raise NotImplementedError

    async def stream(self, messages: Sequence[Message], *, tools: Sequence[Tool] = (),
                     temperature: float | None = None) -> AsyncIterator[StreamChunk]:
        try:
            yield TextDelta(content="first")
            self.started.set()
            await asyncio.Event().wait()
            yield TextDelta(content="never")
        finally:
            self.closed.set()


async def test_cancelling_a_stream_closes_the_inner_stream() -> None:
    inner = HangsAfterFirstToken()

    async def consume() -> list[StreamChunk]:
        return await collect(RetryingModel(inner).stream(MESSAGES))  # type: ignore[arg-type]

    task = asyncio.create_task(consume())
    await inner.started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()
    assert inner.closed.is_set()


def test_wrapper_keeps_the_name_and_exposes_the_wrapped_model() -> None:
    inner = ScriptedModel(name="openai:gpt-x")
    model = RetryingModel(inner)
    assert model.name == "openai:gpt-x"
    assert model.wrapped is inner
