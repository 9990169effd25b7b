"""/v1 requests as an integrator sends them: text that is not valid Unicode, a model looked up by
id, and every parameter Saber does not apply named in X-Saber-Ignored."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest
from server_helpers import LiveServer

from saber.testing import FakeOpenAIServer


def client_for(live: LiveServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{live.url}/v1", api_key="local", max_retries=0)


@pytest.mark.parametrize("stream", [False, True])
def test_a_lone_surrogate_is_a_422_naming_the_message(serve: Callable[..., LiveServer], stream: bool) -> None:
    live = serve()
    for messages, where in (([{"role": "user", "content": "hi \ud800 there"}], "messages[0].content"),
                            ([{"role": "user", "content": "earlier \udfff"}, {"role": "assistant", "content": "ok"},
                              {"role": "user", "content": "now"}], "messages[0].content"),
                            ([{"role": "user", "content": [{"type": "text", "text": "x \ud800"}]}],
                             "messages[0].content[0].text")):
        body = json.dumps({"model": "saber-chat", "stream": stream, "messages": messages})  # as \ud800 escapes
        r = httpx.post(f"{live.url}/v1/chat/completions", content=body, timeout=30,
                       headers={"Content-Type": "application/json"})
        assert r.status_code == 422, r.text
        error: dict[str, Any] = r.json()["error"]
        assert error["message"].startswith(f"{where}: ") and "lone surrogate" in error["message"], error
        assert error["code"] == "invalid_request" and error["param"] == where and error["type"] == "invalid_request_error"


def test_a_model_is_retrieved_by_its_id(serve: Callable[..., LiveServer]) -> None:
    live = serve()
    with client_for(live) as client:
        model = client.models.retrieve("saber-react")
        assert (model.id, model.object, model.owned_by) == ("saber-react", "model", "saber")
        with pytest.raises(openai.NotFoundError, match="gpt-4") as missing:
            client.models.retrieve("gpt-4")
    body: Any = missing.value.body
    assert body["code"] == "model_not_found" and body["type"] == "invalid_request_error"


def test_every_parameter_not_applied_is_named(serve: Callable[..., LiveServer], fake_llm: FakeOpenAIServer) -> None:
    fake_llm.queue("Fine.", "Fine again.")
    live = serve()
    messages: list[Any] = [{"role": "system", "content": "answer in French"}, {"role": "user", "content": "hi"},
                           {"role": "assistant", "content": "hello"}, {"role": "user", "content": "and now?", "name": "ann"}]
    with client_for(live) as client:
        raw = client.chat.completions.with_raw_response.create(
            model="saber-chat", messages=messages, temperature=0.2, top_p=0.9, stop=["\n"], seed=7, max_tokens=50,
            extra_body={"top_k": 3})
        ignored = raw.headers["x-saber-ignored"]
        assert raw.parse().choices[0].message.content == "Fine."
        for name in ("max_tokens=50", "temperature", "top_p", "stop", "seed", "top_k", "messages[0] (system)",
                     "messages[3].name"):
            assert name in ignored, (name, ignored)
        assert "messages[1]" not in ignored and "messages[2]" not in ignored, "the conversation is applied"
        with client.chat.completions.with_streaming_response.create(model="saber-chat", messages=messages[1:2],
                                                                    stream=True, stop="x") as streamed:
            assert streamed.headers["x-saber-ignored"] == "stop: not applied (Saber's models run with the server's settings)"
        for field, value in (("temperature", 2.5), ("temperature", -0.1), ("top_p", 1.5), ("presence_penalty", 3),
                             ("frequency_penalty", -2.5)):
            with pytest.raises(openai.UnprocessableEntityError, match=field):
                client.chat.completions.create(model="saber-chat", messages=messages[1:2], **{field: value})
