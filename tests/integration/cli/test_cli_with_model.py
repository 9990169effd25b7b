"""saber ask against an OpenAI-compatible endpoint (the fake server): planner, tools, streamed answer,
and background memory extraction, all through the real openai client and HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from saber.testing import FakeOpenAIServer

PLAN = json.dumps([
    {"id": "n1", "type": "tool", "tool": "get_time", "params": {"timezone": "Asia/Tokyo"}, "depends_on": []},
    {"id": "n2", "type": "tool", "tool": "get_weather", "params": {"city": "东京"}, "depends_on": []},
], ensure_ascii=False)


def reply(body: dict[str, Any]) -> str:
    """Answer by what is asked: the planner, the background extractors, or the streamed answer."""
    system = body["messages"][0]["content"]
    if "任务规划器" in system or "task planner" in system:
        return PLAN
    if "profile of the user" in system:
        return '{"city": "东京"}'
    if "should remember about the user" in system:
        return "[]"
    assert body.get("stream"), "the answer is streamed"
    return "东京现在的时间已查到；天气服务无法连接。"


@pytest.mark.slow
def test_ask_through_an_openai_compatible_endpoint(tmp_path: Path) -> None:
    with FakeOpenAIServer([reply] * 4) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
        env.update({"SABER_HOME": str(tmp_path), "SABER_LLM_BASE_URL": server.base_url, "SABER_LLM_MODEL": "fake-model",
                    "SABER_LLM_API_KEY": "sk-test", "SABER_SEARCH_BACKEND": "none",
                    "SABER_WEATHER_FORECAST_URL": "http://127.0.0.1:9/v1/forecast",
                    "SABER_WEATHER_GEOCODING_URL": "http://127.0.0.1:9/v1/search",
                    "SABER_MEMORY_EXTRACTION": "every_turn"})  # a question: by default no extraction call
        done = subprocess.run([sys.executable, "-m", "saber.cli", "ask", "东京现在几点，天气怎么样", "--json"], env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        events = [json.loads(line) for line in done.stdout.splitlines()]
        kinds = [e["type"] for e in events]
        assert kinds[:3] in (["start", "route", "plan"], ["start", "route", "graph_ready"])  # streamed: nodes may run first
        assert kinds.count("plan") == 1 and kinds.index("graph_ready") < kinds.index("node_start")
        plan = next(e["data"] for e in events if e["type"] == "plan")
        assert plan["source"] == "model" and [n["tool"] for n in plan["nodes"]] == ["get_time", "get_weather"]
        status = {e["data"]["id"]: e["data"]["status"] for e in events if e["type"] == "node_done"}
        assert status == {"n1": "done", "n2": "failed"}
        answer = "".join(e["data"]["content"] for e in events if e["type"] == "token")
        assert answer == "东京现在的时间已查到；天气服务无法连接。"
        final = events[-1]["data"]
        assert final["answer"] == answer and final["model"] == "openai:fake-model" and final["usage"]["total_tokens"] > 0
        generator = next(r for r in server.chat_requests  # the plan streams too: the answer's is the other stream
                         if r.body.get("stream") and "任务规划器" not in r.body["messages"][0]["content"])
        prompt = generator.body["messages"][-1]["content"]
        assert "Asia/Tokyo" in prompt and "could not be reached" in prompt
        assert all(r.headers.get("authorization") == "Bearer sk-test" for r in server.chat_requests)
        extractors = [r for r in server.chat_requests if "user" in r.body["messages"][0]["content"] and not r.body.get("stream")]
        assert extractors, "background extraction ran before the process exited"
