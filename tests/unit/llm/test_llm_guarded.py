"""GuardedModel: any exception a ModelError, every call bounded in time and tokens, loops cut."""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from saber.llm import ModelError
from saber.llm.deadline import request_deadline
from saber.llm.guarded import GuardedModel
from saber.llm.limits import GenerationLimits
from saber.llm.types import Completion, Message, StreamChunk, StreamEnd, TextDelta
from saber.testing import ScriptedModel

HI = [Message.user("hi")]


class Custom:
    """A user's own ChatModel: raises what it is told, streams what it is given, forever if asked."""

    name = "custom"

    def __init__(self, *, raises: BaseException | None = None, pieces: Any = (), hang: bool = False) -> None:
        self.raises = raises
        self.pieces = pieces
        self.hang = hang
        self.seen: list[dict[str, Any]] = []

    async def complete(self, messages: Sequence[Message], *, tools: Any = (), response_format: Any = None,
                       temperature: float | None = None) -> Completion:
        self.seen.append({})
        if self.raises is not None:
            raise self.raises
        if self.hang:
            await asyncio.Event().wait()
        return Completion(text="ok")

    async def stream(self, messages: Sequence[Message], *, tools: Any = (), temperature: float | None = None) -> AsyncIterator[StreamChunk]:
        for piece in self.pieces:
            yield TextDelta(content=piece)
            await asyncio.sleep(0)
        if self.raises is not None:
            raise self.raises
        if self.hang:
            await asyncio.Event().wait()
        yield StreamEnd(finish_reason="stop")


class TakesMaxTokens(Custom):
    async def complete(self, messages: Sequence[Message], *, tools: Any = (), response_format: Any = None,
                       temperature: float | None = None, max_tokens: int | None = None) -> Completion:
        self.seen.append({"max_tokens": max_tokens})
        return Completion(text="ok")


def babble() -> Any:
    """Endless text with no loop in it."""
    rng = random.Random(7)
    vocab = ["tea", "river", "cloud", "Paris", "seven", "bright", "under", "table", "moss", "quiet", "orbit", "lamp"]
    return (rng.choice(vocab) + " " for _ in itertools.count())


def limits(**kw: Any) -> dict[Any, GenerationLimits]:
    one = GenerationLimits(**{"max_tokens": 64, "timeout": 5.0, "stall": 5.0, **kw})
    return {"planner": one, "answer": one, "tool_arguments": one, "extraction": one}


async def collect(model: GuardedModel) -> tuple[str, StreamEnd | None]:
    text, end = [], None
    async for chunk in model.stream(HI):
        if isinstance(chunk, TextDelta):
            text.append(chunk.content)
        elif isinstance(chunk, StreamEnd):
            end = chunk
    return "".join(text), end


@pytest.mark.parametrize("exc", [ValueError("bad value"), RuntimeError("boom"), TimeoutError("slow"),
                                 ConnectionResetError("reset by peer"), KeyError("k")])
async def test_any_exception_from_a_custom_model_is_a_model_error(exc: Exception) -> None:
    model = GuardedModel(Custom(raises=exc), limits())
    with pytest.raises(ModelError, match=type(exc).__name__) as info:
        await model.complete(HI)
    assert "custom" in str(info.value)
    with pytest.raises(ModelError, match=type(exc).__name__):
        await collect(model)


async def test_an_exception_after_tokens_is_a_model_error_too() -> None:
    with pytest.raises(ModelError, match="RuntimeError"):
        await collect(GuardedModel(Custom(pieces=["Hello ", "there"], raises=RuntimeError("lost")), limits()))


async def test_cancellation_is_not_turned_into_a_model_error() -> None:
    task = asyncio.create_task(GuardedModel(Custom(hang=True), limits(timeout=60)).complete(HI))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_hanging_completion_ends_at_the_call_limit() -> None:
    with pytest.raises(ModelError, match="gave no planner answer within 0.05s"):
        await GuardedModel(Custom(hang=True), limits(timeout=0.05)).complete(HI)


async def test_a_hanging_stream_with_no_text_is_a_model_error() -> None:
    with pytest.raises(ModelError, match="produced no text"):
        await collect(GuardedModel(Custom(hang=True), limits(stall=0.05)))


async def test_a_stream_that_stalls_after_some_text_is_cut_and_says_why() -> None:
    text, end = await collect(GuardedModel(Custom(pieces=["Tokyo is ", "sunny"], hang=True), limits(stall=0.05)))
    assert text == "Tokyo is sunny"
    assert end is not None and end.cut is not None and "progress" in end.cut


async def test_a_stream_that_keeps_producing_is_bounded_by_the_total_time() -> None:
    words = babble()  # never repeats, never ends
    model = GuardedModel(Custom(pieces=words), limits(timeout=0.2, max_tokens=10**9))
    text, end = await collect(model)
    assert end is not None and end.cut is not None and "still going" in end.cut and text


async def test_a_repetition_loop_is_cut_early() -> None:
    model = GuardedModel(Custom(pieces=itertools.repeat("你好！")), limits(timeout=60, max_tokens=10**6))
    text, end = await collect(model)
    assert end is not None and end.cut is not None and "你好！" in end.cut
    assert len(text) < 400


NUMBERED_PLAN = ["1. fetch_page(report='annual report', page=" + f"{i})\n" for i in range(1, 13)]
JSON_PLAN = [f'{{"id": "n{i}", "tool": "fetch_page", "params": {{"report": "annual report", "page": {i}}}}}, '
             for i in range(1, 13)]


@pytest.mark.parametrize("purpose", ["planner", "answer"])
async def test_a_plan_whose_steps_differ_only_in_numbers_streams_whole(purpose: Any) -> None:
    pieces = NUMBERED_PLAN if purpose == "planner" else ["[", *JSON_PLAN, "]"]  # an answer is judged by its text
    model = GuardedModel(Custom(pieces=pieces), limits(timeout=60, max_tokens=10**6)).for_purpose(purpose)
    text, end = await collect(model)
    assert end is not None and end.cut is None and text == "".join(pieces)


async def test_the_same_steps_as_an_answer_in_prose_are_still_a_loop() -> None:
    model = GuardedModel(Custom(pieces=NUMBERED_PLAN), limits(timeout=60, max_tokens=10**6))
    _, end = await collect(model)
    assert end is not None and end.cut is not None


async def test_a_stream_past_max_tokens_is_cut_even_if_the_endpoint_ignores_it() -> None:
    words = babble()
    text, end = await collect(GuardedModel(Custom(pieces=words), limits(max_tokens=20)))
    assert end is not None and end.cut == "the answer passed the limit of 20 tokens"
    assert len(text) <= 20 * 6 + 10


async def test_max_tokens_goes_to_models_that_take_it_only() -> None:
    takes, plain = TakesMaxTokens(), Custom()
    await GuardedModel(takes, limits(max_tokens=99)).complete(HI)
    await GuardedModel(plain, limits()).complete(HI)
    assert takes.seen == [{"max_tokens": 99}] and plain.seen == [{}]


async def test_each_purpose_has_its_own_max_tokens() -> None:
    takes = TakesMaxTokens()
    table = {"planner": GenerationLimits(max_tokens=700), "tool_arguments": GenerationLimits(max_tokens=200),
             "extraction": GenerationLimits(max_tokens=100)}
    guarded = GuardedModel(takes, table)  # type: ignore[arg-type]
    await guarded.complete(HI)
    await guarded.complete(HI, tools=[_tool()])
    await guarded.for_purpose("extraction").complete(HI)
    assert [s["max_tokens"] for s in takes.seen] == [700, 200, 100]


async def test_the_request_deadline_shortens_every_call() -> None:
    model = GuardedModel(Custom(hang=True), limits(timeout=60))
    with request_deadline(asyncio.get_running_loop().time() + 1.0), pytest.raises(ModelError, match=r"within (0\.\d+|1)s"):
        await model.complete(HI)
    with request_deadline(asyncio.get_running_loop().time() - 1), pytest.raises(ModelError, match="no time left"):
        await model.complete(HI)


async def test_a_normal_stream_passes_through_unchanged() -> None:
    text, end = await collect(GuardedModel(ScriptedModel(["Paris is sunny, 21°C."]), limits()))
    assert text == "Paris is sunny, 21°C." and end is not None and end.cut is None and end.finish_reason == "stop"


def _tool() -> Any:
    from saber.tools import tool

    @tool
    def get_time(timezone: str = "UTC") -> str:
        """Time in a zone."""
        return timezone

    return get_time
