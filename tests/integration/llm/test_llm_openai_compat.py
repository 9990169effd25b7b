"""OpenAIChatModel against FakeOpenAIServer: the real openai client over real loopback HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import openai
import pytest

from saber.llm import (
    Message,
    ModelError,
    OpenAIChatModel,
    ResponseFormat,
    RetryingModel,
    StreamChunk,
    StreamEnd,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from saber.testing import FakeOpenAIServer, FakeReply, fake_embedding
from saber.tools import tool


@tool
def get_weather(city: str) -> str:
    """Current weather in a city.

    Args:
        city: City name.
    """
    raise AssertionError("not executed in these tests")


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(api_key="sk-right") as fake:
        yield fake


_open_models: list[OpenAIChatModel] = []


@pytest.fixture(autouse=True)
async def close_models() -> AsyncIterator[None]:
    """Every model a test opens is closed before its event loop ends."""
    yield
    while _open_models:
        await _open_models.pop().aclose()


def new_model(base_url: str, api_key: str | None = None, **kwargs: object) -> OpenAIChatModel:
    model = OpenAIChatModel("fake-model", base_url=base_url, api_key=api_key, **kwargs)  # type: ignore[arg-type]
    _open_models.append(model)
    return model


def model_for(server: FakeOpenAIServer, **kwargs: object) -> OpenAIChatModel:
    return new_model(server.base_url, "sk-right", **kwargs)


async def collect(stream: AsyncIterator[StreamChunk]) -> list[StreamChunk]:
    return [chunk async for chunk in stream]


def text_of(chunks: list[StreamChunk]) -> str:
    return "".join(c.content for c in chunks if isinstance(c, TextDelta))


async def test_complete_text_and_the_request_sent(server: FakeOpenAIServer) -> None:
    server.queue(FakeReply(text="Bonjour", usage=Usage(prompt_tokens=11, completion_tokens=2)))
    result = await model_for(server).complete([Message.system("be brief"), Message.user("hello")])
    assert result.text == "Bonjour"
    assert result.usage == Usage(prompt_tokens=11, completion_tokens=2)
    assert result.finish_reason == "stop" and result.tool_calls == ()
    (request,) = server.chat_requests
    assert request.headers["authorization"] == "Bearer sk-right"
    assert request.body["model"] == "fake-model"
    assert request.body["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}]
    # Nothing the caller did not ask for: strict endpoints reject unknown or unsupported fields.
    for absent in ("tools", "response_format", "temperature", "stream", "stream_options"):
        assert absent not in request.body or request.body[absent] is False
    server.assert_complete()


async def test_temperature_default_and_per_call(server: FakeOpenAIServer) -> None:
    server.queue("a", "b")
    model = model_for(server, temperature=0.2)
    await model.complete([Message.user("x")])
    await model.complete([Message.user("x")], temperature=0.9)
    assert [r.body["temperature"] for r in server.chat_requests] == [0.2, 0.9]


async def test_tools_and_tool_history_are_converted(server: FakeOpenAIServer) -> None:
    server.queue([ToolCall(id="call_w", name="get_weather", arguments={"city": "北京"})])
    call = ToolCall(id="call_prev", name="get_weather", arguments={"city": "Oslo"})
    messages = [
        Message.user("weather in Oslo, then Beijing"),
        Message.assistant("", tool_calls=(call,)),
        Message(role="tool", content="Oslo: 3°C", tool_call_id="call_prev"),
    ]
    result = await model_for(server).complete(messages, tools=[get_weather])
    assert result.tool_calls == (ToolCall(id="call_w", name="get_weather", arguments={"city": "北京"}),)
    assert result.finish_reason == "tool_calls"
    body = server.chat_requests[0].body
    assert body["tools"] == [get_weather.to_openai()]
    assert body["messages"][1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_prev", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}],
    }
    assert body["messages"][2] == {"role": "tool", "content": "Oslo: 3°C", "tool_call_id": "call_prev"}


async def test_broken_arguments_from_the_endpoint_are_repaired_or_kept_raw(server: FakeOpenAIServer) -> None:
    server.queue([{"id": "c1", "name": "get_weather", "arguments": "{'city': 'Paris',}"},
                  {"name": "get_weather", "arguments": {"city": "Rome"}},
                  {"name": "get_weather", "arguments": '{"city": "Par'}])
    result = await model_for(server).complete([Message.user("x")], tools=[get_weather])
    assert [c.arguments for c in result.tool_calls] == [{"city": "Paris"}, {"city": "Rome"}, {"_raw": '{"city": "Par'}]
    assert result.tool_calls[0].id == "c1" and result.tool_calls[1].id


async def test_response_format_is_sent_as_json_schema(server: FakeOpenAIServer) -> None:
    schema = {"type": "object", "properties": {"nodes": {"type": "array"}}, "required": ["nodes"]}
    server.queue('{"nodes": []}')
    result = await model_for(server).complete([Message.user("plan")], response_format=ResponseFormat(name="plan", schema=schema, strict=True))
    assert result.text == '{"nodes": []}'
    assert server.chat_requests[0].body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "plan", "schema": schema, "strict": True},
    }


async def test_stream_text_tool_call_deltas_and_usage(server: FakeOpenAIServer) -> None:
    calls = [ToolCall(id="c1", name="get_weather", arguments={"city": "Oslo"}),
             ToolCall(id="c2", name="get_weather", arguments={"city": "Rome"})]
    server.queue(FakeReply(text="Let me check the weather.", tool_calls=calls, usage=Usage(prompt_tokens=30, completion_tokens=12)))
    chunks = await collect(model_for(server).stream([Message.user("weather?")], tools=[get_weather]))
    assert text_of(chunks) == "Let me check the weather."
    assert sum(isinstance(c, TextDelta) for c in chunks) > 1  # really streamed, not one blob
    deltas = [c for c in chunks if isinstance(c, ToolCallDelta)]
    assert {d.index for d in deltas} == {0, 1}
    assert "".join(d.arguments for d in deltas if d.index == 1) == '{"city": "Rome"}'
    end = chunks[-1]
    assert isinstance(end, StreamEnd)
    assert end.tool_calls == tuple(calls)
    assert end.usage == Usage(prompt_tokens=30, completion_tokens=12)
    assert end.finish_reason == "tool_calls"
    body = server.chat_requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


async def test_stream_parallel_calls_all_at_index_zero_without_ids(server: FakeOpenAIServer) -> None:
    calls = [ToolCall(id="x", name="get_weather", arguments={"city": "Oslo"}),
             ToolCall(id="y", name="get_weather", arguments={"city": "Rome"}),
             ToolCall(id="z", name="get_time", arguments={"timezone": "UTC"})]
    server.queue(FakeReply(tool_calls=calls, index_zero=True, omit_ids=True))
    chunks = await collect(model_for(server).stream([Message.user("x")]))
    end = chunks[-1]
    assert isinstance(end, StreamEnd)
    assert [(c.name, c.arguments) for c in end.tool_calls] == [(c.name, c.arguments) for c in calls]
    assert len({c.id for c in end.tool_calls}) == 3
    # The deltas handed on carry corrected positions, so consumers can group them.
    assert sorted({c.index for c in chunks if isinstance(c, ToolCallDelta)}) == [0, 1, 2]


async def test_stream_falls_back_when_stream_options_is_rejected() -> None:
    async with FakeOpenAIServer(reject_params=["stream_options"]) as server:
        server.queue("first answer", "second answer")
        model = new_model(server.base_url)
        first = await collect(model.stream([Message.user("x")]))
        second = await collect(model.stream([Message.user("x")]))
        assert text_of(first) == "first answer" and text_of(second) == "second answer"
        sent = ["stream_options" in r.body for r in server.chat_requests]
        assert sent == [True, False, False]  # rejected once, then never sent again
        server.assert_complete()


async def test_rate_limit_then_success_is_retried(server: FakeOpenAIServer) -> None:
    server.queue(FakeReply.fail(429, "Rate limit reached"), FakeReply.fail(503, "overloaded"), "made it")
    model = RetryingModel(model_for(server), max_attempts=3, base_delay=0.01)
    result = await model.complete([Message.user("x")])
    assert result.text == "made it"
    assert len(server.chat_requests) == 3
    server.assert_complete()


async def test_stream_5xx_before_any_token_is_retried(server: FakeOpenAIServer) -> None:
    server.queue(FakeReply.fail(500, "boom"), "streamed fine")
    chunks = await collect(RetryingModel(model_for(server), base_delay=0.01).stream([Message.user("x")]))
    assert text_of(chunks) == "streamed fine"
    assert len(server.chat_requests) == 2


async def test_error_mid_stream_is_not_retried_after_tokens(server: FakeOpenAIServer) -> None:
    server.queue(FakeReply(text="partial answer", stream_error="upstream crashed"), "should not be used")
    received: list[StreamChunk] = []
    with pytest.raises(ModelError, match="upstream crashed") as caught:
        async for chunk in RetryingModel(model_for(server), base_delay=0.01).stream([Message.user("x")]):
            received.append(chunk)
    assert text_of(received) == "partial answer"
    assert caught.value.retryable
    assert len(server.chat_requests) == 1


async def test_bad_api_key_is_not_retried_and_says_so(server: FakeOpenAIServer) -> None:
    server.queue("unused")
    model = RetryingModel(new_model(server.base_url, "sk-wrong"), base_delay=0.01)
    with pytest.raises(ModelError) as caught:
        await model.complete([Message.user("x")])
    error = caught.value
    assert error.status == 401 and not error.retryable
    assert str(error) == f"model endpoint {server.base_url} refused: 401 Incorrect API key provided"
    assert len(server.chat_requests) == 1


async def test_scripted_401_message_is_one_line(server: FakeOpenAIServer) -> None:
    server.queue(FakeReply.fail(401, "invalid api key\n(check your settings)"))
    with pytest.raises(ModelError) as caught:
        await model_for(server).complete([Message.user("x")])
    assert "\n" not in str(caught.value)
    assert "refused: 401 invalid api key (check your settings)" in str(caught.value)


async def test_timeout_is_a_retryable_model_error(server: FakeOpenAIServer) -> None:
    server.queue(FakeReply(text="too late", delay=30))
    with pytest.raises(ModelError, match="timed out after 0.3s") as caught:
        await model_for(server, timeout=0.3).complete([Message.user("x")])
    assert caught.value.retryable


async def test_connection_refused_on_a_closed_port() -> None:
    with FakeOpenAIServer() as closed:
        url = closed.base_url
    model = new_model(url)
    with pytest.raises(ModelError) as caught:
        await model.complete([Message.user("x")])
    assert str(caught.value) == f"model endpoint {url} unreachable: connection refused"
    assert caught.value.retryable
    with pytest.raises(ModelError, match="unreachable"):
        await collect(model.stream([Message.user("x")]))


async def test_cancelling_a_slow_stream(server: FakeOpenAIServer) -> None:
    server.queue(FakeReply(text="one two three four five", chunk_delay=60))
    first_token = asyncio.Event()
    received: list[StreamChunk] = []

    async def consume() -> None:
        async for chunk in model_for(server).stream([Message.user("x")]):
            received.append(chunk)
            if isinstance(chunk, TextDelta):
                first_token.set()

    task = asyncio.create_task(consume())
    await first_token.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()
    assert text_of(received) == "one "
    # The HTTP connection was closed too, not left streaming in the background.
    assert await asyncio.to_thread(server.client_disconnected.wait, 30)


async def test_no_reply_queued_gives_a_clear_error(server: FakeOpenAIServer) -> None:
    with pytest.raises(ModelError, match="no reply queued for request #1"):
        await model_for(server).complete([Message.user("x")])
    with pytest.raises(AssertionError, match="no reply queued"):
        server.assert_complete()


async def test_embeddings_and_models_endpoints(server: FakeOpenAIServer) -> None:
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-right", max_retries=0)
    response = await client.embeddings.create(model="fake-embed", input=["alpha", "beta", "alpha"])
    vectors = [item.embedding for item in response.data]
    assert vectors[0] == pytest.approx(fake_embedding("alpha"), abs=1e-6)
    assert vectors[0] == pytest.approx(vectors[2])
    assert vectors[0] != pytest.approx(vectors[1])
    plain = await client.embeddings.create(model="fake-embed", input="alpha", encoding_format="float", dimensions=8)
    assert plain.data[0].embedding == pytest.approx(fake_embedding("alpha", 8))
    assert [m.id async for m in client.models.list()] == ["fake-model"]
    server.queue_embeddings(FakeReply.fail(429, "slow down"))
    with pytest.raises(openai.RateLimitError):
        await client.embeddings.create(model="fake-embed", input="x")
    await client.close()
