"""saber ask with a model configured (the fake OpenAI-compatible server, over HTTP): the exit code
and the last line say what happened. A correct answer after a recovered hiccup is exit 0; an
answer the model could not write is exit 1 with the model's error, and never "no language model"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from saber.llm.types import ToolCall
from saber.testing import FakeOpenAIServer, FakeReply


def ask(server: FakeOpenAIServer, home: Path, query: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
    env.update({"SABER_HOME": str(home), "SABER_LLM_BASE_URL": server.base_url, "SABER_LLM_MODEL": "fake-model",
                "SABER_LLM_API_KEY": "sk-test", "SABER_LLM_MAX_RETRIES": "0", "SABER_SEARCH_BACKEND": "none",
                "SABER_WEATHER_FORECAST_URL": "http://127.0.0.1:9/v1/forecast",
                "SABER_WEATHER_GEOCODING_URL": "http://127.0.0.1:9/v1/search"})
    return subprocess.run([sys.executable, "-m", "saber.cli", "ask", query], env=env, capture_output=True, text=True,
                          timeout=300)


def background(body: dict[str, Any]) -> str | None:
    """The memory extractors' replies (they run after the answer, in the background)."""
    system = body["messages"][0]["content"]
    if "profile of the user" in system:
        return "{}"
    if "should remember" in system:
        return "[]"
    return None


def last_line(done: subprocess.CompletedProcess[str]) -> str:
    return next(line for line in reversed(done.stderr.splitlines()) if line.startswith("—"))


@pytest.mark.slow
def test_a_correct_answer_after_the_endpoint_refused_function_calling_is_exit_0(tmp_path: Path) -> None:
    def reply(body: dict[str, Any]) -> Any:
        if (extraction := background(body)) is not None:
            return extraction
        if body.get("tools"):
            return FakeReply.fail(400, "tools are not supported")
        if "JSON Schema" in body["messages"][0]["content"]:
            return '{"timezone": "Asia/Tokyo"}'
        return "东京现在是下午。"

    with FakeOpenAIServer([reply] * 6) as server:
        done = ask(server, tmp_path, "东京现在几点")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "东京现在是下午。\n" and "saber: error" not in done.stderr
    assert "native function calling failed" in done.stderr  # still shown, as a progress line
    assert last_line(done).startswith("— tool · openai:fake-model")


@pytest.mark.slow
def test_an_answer_the_model_could_not_write_is_exit_1_and_says_the_model_failed(tmp_path: Path) -> None:
    def reply(body: dict[str, Any]) -> Any:
        if (extraction := background(body)) is not None:
            return extraction
        if body.get("tools"):
            return [ToolCall(id="c1", name="get_time", arguments={"timezone": "Asia/Tokyo"})]
        return FakeReply.fail(500, "the model server is overloaded")

    with FakeOpenAIServer([reply] * 6) as server:
        done = ask(server, tmp_path, "东京现在几点")
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("saber: error:")]
    assert len(errors) == 1 and "overloaded" in errors[0]
    assert "Asia/Tokyo" in done.stdout  # the rules' answer from the tool's result, labelled as such
    line = last_line(done)
    assert "no language model" not in line and "the model fake-model did not write this answer" in line


@pytest.mark.slow
def test_a_model_that_keeps_naming_another_city_gets_the_rules_call_and_exit_0(tmp_path: Path) -> None:
    def reply(body: dict[str, Any]) -> Any:
        if (extraction := background(body)) is not None:
            return extraction
        if body.get("tools"):
            return [ToolCall(id="c1", name="get_time", arguments={"timezone": "Asia/Shanghai"})]
        return "现在是下午。"

    with FakeOpenAIServer([reply] * 6) as server:
        done = ask(server, tmp_path, "东京现在几点")
        retry = [r for r in server.chat_requests if r.body.get("tools")][1]
    assert done.returncode == 0, done.stderr
    assert "Asia/Shanghai" in retry.body["messages"][-1]["content"]  # asked again, with the reason
    assert 'tool get_time({"timezone": "东京"})' in done.stderr and "Asia/Tokyo" in done.stderr
    assert done.stdout.startswith("现在是下午。\n\n注：模型给出的调用 get_time(timezone='Asia/Shanghai') 与请求不符")
