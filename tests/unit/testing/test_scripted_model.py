"""ScriptedModel: queued replies, recorded calls, streaming, errors, assert_complete."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from saber.llm.base import ChatModel, ModelError
from saber.llm.types import Completion, Message, StreamEnd, TextDelta, ToolCall, ToolCallDelta
from saber.testing import ScriptedModel
from saber.tools import tool


@tool
def ping() -> str:
    """Ping."""
    return "pong"


async def test_replies_in_order_and_calls_recorded() -> None:
    model = ScriptedModel(["one", Completion(text="two", tool_calls=(ToolCall(id="c1", name="ping"),))])
    assert isinstance(model, ChatModel)
    first = await model.complete([Message.system("sys"), Message.user("hi")], tools=[ping])
    second = await model.complete([Message.user("again")])
    assert (first.text, second.text) == ("one", "two")
    assert second.tool_calls[0].name == "ping"
    assert model.calls[0].tools == ["ping"] and model.calls[0].prompt == "sys\nhi"
    assert first.usage.total_tokens > 0
    model.assert_complete()


async def test_exceptions_and_functions_of_the_messages() -> None:
    def echo(messages: Sequence[Message]) -> str:
        return messages[-1].content.upper()

    model = ScriptedModel([ModelError("rate limited", retryable=True), echo])
    with pytest.raises(ModelError, match="rate limited"):
        await model.complete([Message.user("x")])
    assert (await model.complete([Message.user("shout")])).text == "SHOUT"


async def test_stream_yields_deltas_then_end() -> None:
    call = ToolCall(id="c1", name="ping", arguments={"a": 1})
    model = ScriptedModel(["hello big world", Completion(text="", tool_calls=(call,))])
    chunks = [c async for c in model.stream([Message.user("x")])]
    assert "".join(c.content for c in chunks if isinstance(c, TextDelta)) == "hello big world"
    assert len([c for c in chunks if isinstance(c, TextDelta)]) == 3
    assert isinstance(chunks[-1], StreamEnd) and chunks[-1].finish_reason == "stop"
    tool_chunks = [c async for c in model.stream([Message.user("y")])]
    assert isinstance(tool_chunks[0], ToolCallDelta) and tool_chunks[0].name == "ping"
    end = tool_chunks[-1]
    assert isinstance(end, StreamEnd) and end.tool_calls == (call,)
    assert model.calls[0].streamed


async def test_running_out_and_leftovers_are_reported() -> None:
    model = ScriptedModel(["only"])
    await model.complete([Message.user("a")])
    with pytest.raises(AssertionError, match="no reply queued for call #2"):
        await model.complete([Message.user("b")])
    leftover = ScriptedModel(["unused"])
    with pytest.raises(AssertionError, match="1 queued replies were never used"):
        leftover.assert_complete()
