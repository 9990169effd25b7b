"""FakeOpenAIServer's ``token_delay``: a reply takes as long as its tokens take to generate.

Only lower bounds on time are asserted (waiting cannot finish early); no upper bounds."""

from __future__ import annotations

import json
import time

import httpx

from saber.llm.types import ToolCall
from saber.testing import FakeOpenAIServer, FakeReply

TEXT = "word " * 80  # 400 characters: 100 tokens at characters / 4


def _post(server: FakeOpenAIServer, stream: bool) -> tuple[float, str]:
    body = {"model": server.model, "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    start = time.perf_counter()
    with httpx.Client(timeout=30) as client:
        response = client.post(f"{server.base_url}/chat/completions", json=body)
    return time.perf_counter() - start, response.text


def test_a_plain_reply_waits_for_all_its_tokens() -> None:
    with FakeOpenAIServer([FakeReply(text=TEXT, token_delay=0.004)]) as server:
        took, raw = _post(server, stream=False)
    assert json.loads(raw)["choices"][0]["message"]["content"] == TEXT
    assert took >= 100 * 0.004


def test_a_stream_is_paced_by_its_tokens_and_arrives_whole() -> None:
    call = ToolCall(id="c1", name="get_weather", arguments={"city": "Paris" * 20})
    with FakeOpenAIServer([FakeReply(text=TEXT, tool_calls=[call], token_delay=0.004)]) as server:
        took, raw = _post(server, stream=True)
    events = [json.loads(line[6:]) for line in raw.splitlines() if line.startswith("data: {")]
    text = "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e["choices"])
    arguments = "".join(c["function"].get("arguments") or "" for e in events if e["choices"]
                        for c in e["choices"][0]["delta"].get("tool_calls") or ())
    assert text == TEXT
    assert json.loads(arguments) == {"city": "Paris" * 20}
    assert took >= (len(TEXT) + len("get_weather") + len(arguments)) / 4 * 0.004


def test_without_token_delay_nothing_changes() -> None:
    with FakeOpenAIServer([FakeReply(text=TEXT)]) as server:
        _, raw = _post(server, stream=False)
    reply = json.loads(raw)
    assert reply["choices"][0]["message"]["content"] == TEXT
    assert reply["usage"]["completion_tokens"] == len(TEXT) // 4
