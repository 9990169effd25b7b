"""saber model check against a real HTTP endpoint (the fake OpenAI server): what it probes and prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from saber.llm.check import check_endpoint
from saber.llm.openai_compat import OpenAIChatModel
from saber.llm.types import ToolCall
from saber.testing import FakeOpenAIServer, FakeReply


def capable(body: dict[str, Any]) -> Any:
    """An endpoint that does everything: tool calls, json_schema, json_object, streaming."""
    if body.get("tools"):
        return [ToolCall(id="c1", name="get_time", arguments={"city": "Tokyo"})]
    if body.get("response_format"):
        return '{"city": "Paris"}'
    return " ".join(str(i) for i in range(1, 41)) if body.get("stream") else "ok"


async def test_a_capable_endpoint_passes_every_probe() -> None:
    with FakeOpenAIServer([capable] * 5) as server:
        async with OpenAIChatModel("fake-model", base_url=server.base_url) as model:
            report = await check_endpoint(model, probe_seconds=10)
        sent = [r.body for r in server.requests if r.method == "POST"]
    assert {name: p.ok for name, p in report.probes.items()} == {
        "models": True, "completion": True, "streaming": True, "tool_calls": True, "json_schema": True, "json_object": True}
    assert "fake-model listed" in report.probes["models"].detail
    assert report.probes["tool_calls"].detail == 'get_time({"city": "Tokyo"})'
    assert report.tokens_per_second is not None and report.tokens_per_second > 0
    assert report.uses()["plans"].startswith("response_format json_schema")
    assert all(body.get("max_tokens") for body in sent), "every probe is bounded"


async def test_what_an_endpoint_cannot_do_is_said_not_raised() -> None:
    def plain(body: dict[str, Any]) -> Any:
        return "I think it is Paris." if not body.get("stream") else "1 2 3"

    with FakeOpenAIServer([plain] * 4, reject_params=["response_format"]) as server:
        async with OpenAIChatModel("other-model", base_url=server.base_url) as model:
            report = await check_endpoint(model, probe_seconds=10)
    probes = report.probes
    assert probes["completion"].ok and probes["streaming"].ok
    assert not probes["tool_calls"].ok and "no native tool call" in probes["tool_calls"].detail
    assert not probes["json_schema"].ok and "400" in probes["json_schema"].detail
    assert not probes["json_object"].ok and "refused" in probes["json_object"].detail
    assert "not listed (the server has: fake-model)" in probes["models"].detail
    assert report.uses() == {"plans": "JSON in the prompt, parsed and repaired (the rule planner when it is unusable)",
                             "tool arguments": "tool calls written as text, parsed", "answers": "streamed"}


async def test_a_hanging_endpoint_is_bounded_per_probe() -> None:
    with FakeOpenAIServer([FakeReply(text="late", delay=5)]) as server:
        async with OpenAIChatModel("fake-model", base_url=server.base_url) as model:
            report = await check_endpoint(model, probe_seconds=0.5)
    assert report.probes["models"].ok
    assert report.probes["completion"].detail == "no answer within 0.5s"


@pytest.mark.slow
def test_the_command_prints_what_saber_will_use(tmp_path: Path) -> None:
    with FakeOpenAIServer([capable] * 5) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
        env.update({"SABER_HOME": str(tmp_path), "SABER_LLM_BASE_URL": server.base_url, "SABER_LLM_MODEL": "fake-model"})
        done = subprocess.run([sys.executable, "-m", "saber.cli", "model", "check", "--json"], env=env,
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["reachable"] and report["uses"]["tool arguments"] == "native tool calls"
    env["SABER_LLM_BASE_URL"] = "http://127.0.0.1:9/v1"
    dead = subprocess.run([sys.executable, "-m", "saber.cli", "model", "check", "--timeout", "5"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert dead.returncode == 1 and "did not answer" in dead.stdout and "Traceback" not in dead.stderr
