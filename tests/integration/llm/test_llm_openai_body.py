"""``OpenAIChatModel`` sends its request fields past the client's per-request transform
(``as_sent``): the endpoint must receive the very body the client's typed ``create`` would send,
for every shape of message, tool and option Saber sends."""

from __future__ import annotations

from typing import Any

import pytest

from saber.llm import Message, OpenAIChatModel, ResponseFormat, ToolCall
from saber.testing import FakeOpenAIServer
from saber.tools import tool


@tool
def get_weather(city: str, days: int = 1) -> str:
    """Weather in a city.

    Args:
        city: City name.
        days: How many days ahead.
    """
    raise AssertionError("not executed")


HISTORY = [
    Message(role="system", content="You are terse."),
    Message(role="user", content="北京和上海的天气？", name="alice"),
    Message(
        role="assistant",
        content="",
        tool_calls=[
            ToolCall(id="c1", name="get_weather", arguments={"city": "北京"}),
            ToolCall(id="c2", name="get_weather", arguments={"city": "上海"}),
        ],
    ),
    Message(role="tool", content='{"temp": 3}', tool_call_id="c1"),
    Message(role="tool", content='{"temp": 9}', tool_call_id="c2"),
    Message(role="assistant", content="北京 3 度，上海 9 度。"),
    Message(role="user", content="And tomorrow? \u0000 odd \ud7ff text"),
]


def _bodies(fake: FakeOpenAIServer) -> list[dict[str, Any]]:
    return [dict(r.body) for r in fake.chat_requests]


@pytest.mark.parametrize("temperature", [None, 0.2])
async def test_a_streamed_request_sends_what_the_typed_create_sends(temperature: float | None) -> None:
    with FakeOpenAIServer(["one", "two"]) as fake:
        model = OpenAIChatModel(fake.model, base_url=fake.base_url, api_key="k", temperature=temperature)
        try:
            async for _ in model.stream(HISTORY, tools=[get_weather], max_tokens=50):
                pass
            params = model._params(HISTORY, [get_weather], None, max_tokens=50)
            stream = await model.client.chat.completions.create(
                **params, stream=True, stream_options={"include_usage": True}
            )
            async for _ in stream:
                pass
        finally:
            await model.aclose()
        saber, typed = _bodies(fake)
    assert saber == typed
    assert saber["messages"][2]["tool_calls"][1]["function"] == {
        "name": "get_weather",
        "arguments": '{"city": "上海"}',
    }
    assert saber["tools"][0]["function"]["name"] == "get_weather" and saber["max_tokens"] == 50


async def test_a_plain_request_with_a_response_format_sends_what_the_typed_create_sends() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    with FakeOpenAIServer(['{"city": "北京"}', '{"city": "北京"}']) as fake:
        model = OpenAIChatModel(fake.model, base_url=fake.base_url, api_key="k", structured="openai")
        try:
            answer = await model.complete(HISTORY, response_format=ResponseFormat(name="city", schema=schema))
            params = model._params(HISTORY, [], None)
            await model.structured.add(params, ResponseFormat(name="city", schema=schema), model.client)
            await model.client.chat.completions.create(**params, stream=False)
        finally:
            await model.aclose()
        saber, typed = _bodies(fake)
    assert answer.text == '{"city": "北京"}'
    assert saber == typed
    assert saber["response_format"]["type"] == "json_schema"
