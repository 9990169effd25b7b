"""/v1 with the official openai client: a streamed answer arrives once, a failed model is an error,
and what Saber cannot honour is refused."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from server_helpers import LiveServer, make_agent, settings_for

from saber.llm.openai_compat import OpenAIChatModel
from saber.testing import FakeOpenAIServer
from saber.testing.fake_openai import FakeReply


def client_for(live: LiveServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{live.url}/v1", api_key="local", max_retries=0)


def streamed(live: LiveServer, model: str, query: str) -> tuple[str, str]:
    """The concatenated content of a streamed completion, and the answer the task stored."""
    with client_for(live) as client:
        chunks = list(client.chat.completions.create(model=model, stream=True,
                                                     messages=[{"role": "user", "content": query}]))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    task = httpx.get(f"{live.url}/api/tasks/{chunks[0].id.removeprefix('chatcmpl-')}", timeout=30).json()
    return text, task["answer"]


def test_a_cut_answer_stored_trimmed_is_streamed_once(serve: Callable[..., LiveServer],
                                                       fake_llm: FakeOpenAIServer) -> None:
    fake_llm.queue(FakeReply(text="Green tea is not fermented and  ", finish_reason="length"))
    live = serve()
    text, answer = streamed(live, "saber-chat", "tell me about green tea")
    assert answer == "Green tea is not fermented and\n\n(The answer was cut: the model reached its token limit.)"
    assert text.count("Green tea") == 1 and text.count("The answer was cut") == 1, text
    assert text.split() == answer.split(), "the same text; only the spaces the answer trimmed differ"


def test_a_rejected_model_answer_is_followed_once_by_its_replacement(serve: Callable[..., LiveServer],
                                                                     fake_llm: FakeOpenAIServer) -> None:
    echo = "The user's question: what time is it in UTC"
    fake_llm.queue("no plan here", echo)  # the planner's output is unusable (rules plan), the answer echoes the prompt
    live = serve()
    text, answer = streamed(live, "saber-react", "what time is it in UTC")
    assert answer.startswith("Note: the language model's answer was not usable") and "In UTC it is" in answer
    assert text == f"{echo}\n\n{answer}", "the rejected text, one separator, the replacement once"


def test_an_answer_cut_to_max_answer_chars_after_it_streamed_adds_only_the_note(
        serve: Callable[..., LiveServer], fake_llm: FakeOpenAIServer) -> None:
    fake_llm.queue("one two three four five six seven eight nine ten")
    live = serve(agent={"max_answer_chars": 20})
    text, answer = streamed(live, "saber-chat", "count to ten")
    assert answer.startswith("one two three four f\n[truncated: the answer had 48 characters")
    assert text == "one two three four five six seven eight nine ten" + answer[20:]


@pytest.fixture
def failing(tmp_path: Path, refused_url: str) -> Iterator[LiveServer]:
    """A server whose model endpoint refuses every connection."""
    settings = settings_for(tmp_path / "home")
    live = LiveServer(make_agent(settings, OpenAIChatModel("m", base_url=f"{refused_url}/v1", api_key="k")),
                      settings).start()
    yield live
    live.stop()


def test_a_failed_model_with_no_rule_answer_is_an_error(failing: LiveServer, refused_url: str) -> None:
    hello = [{"role": "user", "content": "hello there"}]
    with client_for(failing) as client:
        with pytest.raises(openai.InternalServerError) as plain:
            client.chat.completions.create(model="saber-chat", messages=hello)
        assert plain.value.status_code == 502
        body: Any = plain.value.body
        assert body["code"] == "model_failed" and "the language model failed" in body["message"]
        assert f"{refused_url}/v1 unreachable" in body["message"]

        contents: list[str] = []
        with pytest.raises(openai.APIError, match="the language model failed") as raised:
            for chunk in client.chat.completions.create(model="saber", messages=hello, stream=True):
                contents += [c.delta.content or "" for c in chunk.choices]
        assert f"{refused_url}/v1 unreachable" in raised.value.message
        assert "".join(contents) == "", "no apology passed off as an answer"

        ruled = client.chat.completions.create(model="saber-tool", messages=[{"role": "user",
                                                                                "content": "what time is it in UTC"}])
    content = ruled.choices[0].message.content or ""
    assert "assembled by rules" in content and "In UTC it is" in content, "a rule answer stays an answer"


def test_what_saber_cannot_honour_is_refused(serve: Callable[..., LiveServer], fake_llm: FakeOpenAIServer) -> None:
    fake_llm.queue("Fine.")
    live = serve()
    hi = [{"role": "user", "content": "hi"}]
    with client_for(live) as client:
        with pytest.raises(openai.BadRequestError, match="n > 1 is not supported"):
            client.chat.completions.create(model="saber-chat", messages=hi, n=2)
        with pytest.raises(openai.BadRequestError, match="response_format"):
            client.chat.completions.create(model="saber-chat", messages=hi, response_format={"type": "json_object"})
        image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
        with pytest.raises(openai.BadRequestError, match=r"messages\[0\].content\[0\]: only text content is supported"):
            client.chat.completions.create(model="saber-chat", messages=[{"role": "user", "content": [image]}])
        reply = client.chat.completions.create(model="saber-chat", messages=hi, max_tokens=4096, n=1,
                                               response_format={"type": "text"})
    assert reply.choices[0].message.content == "Fine."
    assert fake_llm.chat_requests[0].body["max_tokens"] == 1024, "the server's answer limit, within what was asked"


def test_a_lower_max_tokens_is_accepted_and_named_as_not_applied(serve: Callable[..., LiveServer],
                                                                fake_llm: FakeOpenAIServer) -> None:
    fake_llm.queue("Fine.", "Fine again.", "Fine once more.")
    live = serve()
    hi = [{"role": "user", "content": "hi"}]
    with client_for(live) as client:
        raw = client.chat.completions.with_raw_response.create(model="saber-chat", messages=hi, max_tokens=50)
        assert raw.parse().choices[0].message.content == "Fine."
        assert raw.headers["x-saber-ignored"] == "max_tokens=50: answers are bounded by llm.max_tokens_answer=1024"
        with client.chat.completions.with_streaming_response.create(model="saber-chat", messages=hi, max_tokens=50,
                                                                    stream=True) as streamed:
            assert "llm.max_tokens_answer=1024" in streamed.headers["x-saber-ignored"]
        plain = client.chat.completions.with_raw_response.create(model="saber-chat", messages=hi)
    assert "x-saber-ignored" not in plain.headers
