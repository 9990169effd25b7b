"""Each mode over real HTTP: the SSE event order, sequence ids, and the JSON /api/chat answer."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import httpx
from server_helpers import LiveServer, collapse, read_sse

from saber.llm.types import ToolCall
from saber.testing import FakeOpenAIServer
from saber.tools import tool


@tool
async def city_weather(city: str) -> str:
    """Weather of a city (a test tool with a fixed report)."""
    await asyncio.sleep(0)
    return f"{city}: sunny, 21°C"


def stream(live: LiveServer, body: dict[str, object]) -> list[tuple[int | None, str, dict[str, object]]]:
    with httpx.Client(base_url=live.url, timeout=30) as client, client.stream("POST", "/api/chat/stream", json=body) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        return [(e.id, e.event, e.data) for e in read_sse(r)]


def test_chat_mode_streams_tokens_then_done(serve: Callable[..., LiveServer], fake_llm: FakeOpenAIServer) -> None:
    fake_llm.queue("你好！我是 Saber。")
    live = serve()
    events = stream(live, {"message": "你好"})
    assert collapse([k for _, k, _ in events]) == ["start", "route", "token", "done"]
    assert [i for i, _, _ in events] == list(range(1, len(events) + 1)), "ids are the sequence numbers"
    done = events[-1][2]
    assert done["answer"] == "你好！我是 Saber。" and done["mode"] == "chat" and done["model"] == "openai:fake-model"
    assert "".join(d["content"] for _, k, d in events if k == "token") == done["answer"]
    assert done["usage"]["total_tokens"] > 0


def test_tool_mode_event_order(serve: Callable[..., LiveServer], fake_llm: FakeOpenAIServer) -> None:
    # with a model, tool mode asks it for the arguments (native function calling), then for the answer
    fake_llm.queue(ToolCall(id="c1", name="get_time", arguments={"timezone": "Asia/Tokyo"}), "东京现在是中午。")
    live = serve()
    events = stream(live, {"message": "东京现在几点"})
    assert collapse([k for _, k, _ in events]) == ["start", "route", "tool_call", "token", "done"]
    call = events[2][2]
    assert call["tool_name"] == "get_time" and "Tokyo" in str(call["tool_result"])


def test_rag_mode_event_order(serve: Callable[..., LiveServer], fake_llm: FakeOpenAIServer) -> None:
    fake_llm.queue("ClusterIP 只在集群内部可达 [1]。")
    live = serve()
    files = {"files": ("k8s.md", "# Service\n\nClusterIP 是默认类型，只在集群内部可达。".encode(), "text/markdown")}
    assert httpx.post(f"{live.url}/api/documents", files=files, timeout=60).status_code == 200
    events = stream(live, {"message": "ClusterIP 可以从集群外访问吗", "mode": "rag"})
    assert collapse([k for _, k, _ in events]) == ["start", "route", "rag_result", "token", "done"]
    assert events[2][2]["hits"][0]["title"] == "Service"


def test_react_mode_event_order(serve: Callable[..., LiveServer], fake_llm: FakeOpenAIServer) -> None:
    plan = [{"id": "n1", "tool": "get_time", "params": {"timezone": "Asia/Shanghai"}},
            {"id": "n2", "tool": "city_weather", "params": {"city": "北京"}}]
    fake_llm.queue(json.dumps(plan), "北京晴，21°C。")
    live = serve(tools=[city_weather], planner={"stream": False})  # streamed: tests/integration/agent/test_agent_streamed_plan.py
    events = stream(live, {"message": "现在几点，北京天气怎么样", "mode": "react"})
    kinds = [k for _, k, _ in events if k not in ("step", "token")]
    assert kinds[:4] == ["start", "route", "plan", "graph_ready"]
    assert sorted(kinds[4:8]) == ["node_done", "node_done", "node_start", "node_start"]
    assert kinds[8:] == ["done"]
    assert events[-1][2]["answer"] == "北京晴，21°C。"


def test_no_model_mode_and_the_json_answer(serve: Callable[..., LiveServer]) -> None:
    live = serve(model=False)
    r = httpx.post(f"{live.url}/api/chat", json={"message": "现在几点 in UTC"}, timeout=60)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["model"] is None and body["interrupted"] is False and body["task_id"]
    assert [e["id"] for e in body["events"]] == list(range(1, len(body["events"]) + 1))
    assert body["events"][0]["type"] == "start" and body["events"][-1]["type"] == "done"
    assert body["events"][-1]["data"]["answer"] == body["answer"]


def test_an_answer_from_the_plans_template_says_so_in_the_json_answer(serve: Callable[..., LiveServer],
                                                                      fake_llm: FakeOpenAIServer) -> None:
    plan = [{"id": "n1", "tool": "city_weather", "params": {"city": "北京"}}, {"answer": "北京：$n1"}]
    fake_llm.queue(json.dumps(plan, ensure_ascii=False))
    live = serve(tools=[city_weather], planner={"stream": False})
    body = httpx.post(f"{live.url}/api/chat", json={"message": "北京天气怎么样", "mode": "react"}, timeout=60).json()
    assert body["answer_template"] is True and body["answer"].startswith("北京：") and body["model"]
    assert body["events"][-1]["data"]["answer_template"] is True
    fake_llm.assert_complete()  # one model call: the plan; nobody asked the model for the answer
