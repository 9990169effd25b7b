"""Saber as an OpenAI-compatible model: the official openai client, plain and streamed."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import openai
import pytest
from server_helpers import LiveServer

from saber.testing import FakeOpenAIServer


def client_for(live: LiveServer, key: str = "key-alice") -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{live.url}/v1", api_key=key, max_retries=0)


def test_plain_completion_with_the_conversation(serve: Callable[..., LiveServer], fake_llm: FakeOpenAIServer) -> None:
    fake_llm.queue("Your name is 小明.")
    live = serve(keys=True)
    with client_for(live) as client:
        reply = client.chat.completions.create(model="saber-chat", messages=[
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "I am 小明"},
            {"role": "assistant", "content": "Hello 小明"},
            {"role": "user", "content": "What is my name?"},
        ])
    assert reply.choices[0].message.content == "Your name is 小明."
    assert reply.choices[0].finish_reason == "stop" and reply.model == "saber-chat"
    assert reply.usage is not None and reply.usage.total_tokens > 0
    sent = [m for m in fake_llm.chat_requests[0].body["messages"] if m["role"] != "system"]
    assert [m["content"] for m in sent] == ["I am 小明", "Hello 小明", "What is my name?"], "earlier messages are the conversation"


def test_streamed_completion(serve: Callable[..., LiveServer], fake_llm: FakeOpenAIServer) -> None:
    fake_llm.queue("one two three four five")
    live = serve(keys=True)
    with client_for(live) as client:
        chunks = list(client.chat.completions.create(model="saber", messages=[{"role": "user", "content": "count to five"}],
                                                     stream=True, stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "one two three four five"
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) > 1, "streamed in pieces"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0


def test_streamed_without_a_model_sends_the_answer(serve: Callable[..., LiveServer]) -> None:
    live = serve(model=False)
    with client_for(live, "anything") as client:
        chunks = list(client.chat.completions.create(model="saber-tool", stream=True,
                                                     messages=[{"role": "user", "content": "现在几点 in UTC"}]))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert "UTC" in text


def test_models_and_refusals(serve: Callable[..., LiveServer]) -> None:
    live = serve(keys=True)
    with client_for(live) as client:
        assert [m.id for m in client.models.list()] == ["saber", "saber-chat", "saber-tool", "saber-rag", "saber-react"]
        with pytest.raises(openai.BadRequestError, match="client-side tools"):
            client.chat.completions.create(model="saber", messages=[{"role": "user", "content": "hi"}], tools=[
                {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}])
        with pytest.raises(openai.NotFoundError, match="gpt-4o"):
            client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        with pytest.raises(openai.UnprocessableEntityError, match="no user message"):
            client.chat.completions.create(model="saber", messages=[{"role": "system", "content": "x"}])
    with client_for(live, "wrong") as client, pytest.raises(openai.AuthenticationError):
        client.models.list()
    r = httpx.post(f"{live.url}/v1/chat/completions", headers={"Authorization": "Bearer key-bob"},
                   json={"model": "saber", "messages": "hi"})
    assert r.status_code == 422 and "messages" in r.json()["error"]["message"]
