"""One trace from the API node through the queue to the worker, with GenAI attributes; and the
metrics a run leaves. In one process (the OTel SDK's in-memory exporter), but through the real
queue (PostgreSQL) and event stream (Redis)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from cluster_helpers import REDIS_URL
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from saber.agent import Agent
from saber.cluster.runtime import Cluster
from saber.config import Settings
from saber.observability.metrics import exposition
from saber.server.app import create_app
from saber.testing import ScriptedModel
from saber.tools import tool

pytestmark = pytest.mark.postgres


@pytest.fixture
def spans(otel_spans: InMemorySpanExporter) -> InMemorySpanExporter:
    return otel_spans


@tool
async def lookup(item: str) -> str:
    """Look an item up (a test tool)."""
    return f"found {item}"


@pytest.fixture
async def cluster(plain_pg_url: str, redis_prefix: str, tmp_path: Path) -> AsyncIterator[Cluster]:
    settings = Settings(home=tmp_path / "q", database={"url": plain_pg_url}, redis={"url": REDIS_URL},
                        cluster={"redis_prefix": redis_prefix})
    opened = await Cluster.open(settings)
    yield opened
    await opened.aclose()


async def test_one_trace_runs_from_the_request_through_the_queue_to_the_worker(
        cluster: Cluster, spans: InMemorySpanExporter, tmp_path: Path) -> None:
    model = ScriptedModel(['[{"id": "n1", "tool": "lookup", "params": {"item": "a"}}]', "the answer"])
    agent = Agent(Settings(home=tmp_path / "home", search={"backend": "none"}), model=model, builtin=False, tools=[lookup])
    runs, worker = cluster.run_manager(agent), cluster.worker(agent, concurrency=1)
    app = create_app(agent, agent.settings)
    app.state.agent, app.state.runs = agent, runs  # what the lifespan sets (the ASGI transport runs none)
    working = asyncio.create_task(worker.run())
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t", timeout=60) as client:
            reply = await client.post("/api/chat", json={"message": "look up a", "mode": "react", "task_id": "traced"})
    finally:
        worker.stop()
        await working
        await agent.aclose()
    assert reply.status_code == 200 and reply.json()["answer"] == "the answer", reply.text
    by_name = {s.name: s for s in spans.get_finished_spans()}
    request, enqueue, invoke = by_name["POST /api/chat"], by_name["enqueue saber.run"], by_name["invoke_agent saber"]
    node, call = by_name["node n1"], by_name["execute_tool lookup"]
    assert {s.context.trace_id for s in (request, enqueue, invoke, node, call)} == {request.context.trace_id}
    assert request.parent is None, "the request's span is the trace's root"
    assert invoke.parent.span_id == enqueue.context.span_id, "the worker continues the API node's trace"  # type: ignore[union-attr]
    assert node.parent.span_id == invoke.context.span_id and call.parent.span_id == node.context.span_id  # type: ignore[union-attr]
    assert invoke.attributes["gen_ai.operation.name"] == "invoke_agent"  # type: ignore[index]
    assert call.attributes["gen_ai.operation.name"] == "execute_tool"  # type: ignore[index]
    assert call.attributes["gen_ai.tool.name"] == "lookup"  # type: ignore[index]
    assert invoke.attributes["saber.mode"] == "react"  # type: ignore[index]
    chats = [s for s in spans.get_finished_spans() if s.name.startswith("chat ")]
    assert len(chats) == 2, "a span per model call: the plan and the answer"
    for chat in chats:
        assert chat.context.trace_id == request.context.trace_id
        assert chat.attributes["gen_ai.operation.name"] == "chat"  # type: ignore[index]
        assert chat.attributes["gen_ai.request.model"] == model.name  # type: ignore[index]
        assert "gen_ai.usage.input_tokens" in chat.attributes  # type: ignore[operator]
    text = exposition()[0].decode()
    assert 'saber_node_duration_seconds_count{status="done",tool="lookup"}' in text
    assert "saber_queue_wait_seconds_count" in text
