"""Traces of the in-process server (no distributed mode): the request's span is the root, the
run's ``invoke_agent`` span sits under it, and under that a span per model call, graph node and
tool call, with the GenAI semantic-convention attributes. Spans kept by the OTel SDK's in-memory
exporter; and, end to end, ``saber serve`` with ``otel_endpoint`` exporting over OTLP/HTTP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_helpers import LiveServer, free_port, wait_ready

from saber.testing import FakeOpenAIServer
from saber.tools import tool


@tool
async def lookup(item: str) -> str:
    """Look an item up (a test tool)."""
    return f"found {item}"


def finished(spans: Any, name: str) -> Any:
    deadline = time.monotonic() + 10  # the run's span ends just after the response is sent
    while time.monotonic() < deadline:
        found = [s for s in spans.get_finished_spans() if s.name == name]
        if found:
            return found[0]
        time.sleep(0.01)
    raise AssertionError(f"no span {name!r} among {[s.name for s in spans.get_finished_spans()]}")


def _ancestors(span: Any, by_id: dict[int, Any]) -> list[Any]:
    chain = []
    while span.parent is not None:
        span = by_id[span.parent.span_id]
        chain.append(span)
    return chain


def test_a_request_is_one_trace_from_the_http_span_to_each_tool_call(
        serve: Callable[..., LiveServer], fake_llm: FakeOpenAIServer, otel_spans: Any) -> None:
    live = serve(tools=[lookup], builtin=False)
    fake_llm.queue(json.dumps([{"id": "n1", "tool": "lookup", "params": {"item": "a"}}]), "the answer")
    reply = httpx.post(live.url + "/api/chat", json={"message": "look up a", "mode": "react", "task_id": "t1"},
                       timeout=60)
    assert reply.status_code == 200 and reply.json()["answer"] == "the answer", reply.text
    invoke = finished(otel_spans, "invoke_agent saber")
    request = finished(otel_spans, "POST /api/chat")
    node, call = finished(otel_spans, "node n1"), finished(otel_spans, "execute_tool lookup")
    chats = [s for s in otel_spans.get_finished_spans() if s.name.startswith("chat ")]
    assert request.parent is None, "the request's span is the trace's root"
    by_id = {s.context.span_id: s for s in otel_spans.get_finished_spans()}
    assert invoke.parent.span_id in by_id and _ancestors(invoke, by_id)[-1] is request, "the run is under the request"
    assert node.parent.span_id == invoke.context.span_id and call.parent.span_id == node.context.span_id
    assert len(chats) == 2 and all(c.parent.span_id == invoke.context.span_id for c in chats), "the plan and the answer"
    assert {s.context.trace_id for s in (request, invoke, node, call, *chats)} == {request.context.trace_id}
    assert invoke.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert invoke.attributes["saber.task_id"] == "t1" and invoke.attributes["saber.mode"] == "react"
    assert call.attributes["gen_ai.tool.name"] == "lookup" and call.attributes["gen_ai.operation.name"] == "execute_tool"
    for chat in chats:
        assert fake_llm.model in chat.attributes["gen_ai.request.model"]
        assert chat.attributes["gen_ai.usage.input_tokens"] > 0


def test_without_tracing_a_request_leaves_no_span(
        serve: Callable[..., LiveServer], fake_llm: FakeOpenAIServer, otel_spans: Any) -> None:
    from saber.observability import tracing

    tracing._enabled = False
    live = serve(tools=[lookup], builtin=False)
    fake_llm.queue(json.dumps([{"id": "n1", "tool": "lookup", "params": {"item": "a"}}]), "the answer")
    reply = httpx.post(live.url + "/api/chat", json={"message": "look up a", "mode": "react"}, timeout=60)
    assert reply.status_code == 200
    assert not [s.name for s in otel_spans.get_finished_spans() if s.name.startswith(("invoke_agent", "chat", "node"))]


class _Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver: keeps the span names of every ``POST /v1/traces``."""

    names: list[str] = []

    def do_POST(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        if self.path == "/v1/traces":
            self.names.extend(span.name for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    _Collector.names = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.slow
def test_saber_serve_with_otel_endpoint_exports_its_spans_over_otlp(collector: str, tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
    env.update({"SABER_HOME": str(tmp_path / "home"), "SABER_OTEL_ENDPOINT": collector, "SABER_SEARCH_BACKEND": "none"})
    proc = subprocess.Popen([sys.executable, "-m", "saber.cli", "serve", "--port", str(port)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        wait_ready(proc, port)
        base = f"http://127.0.0.1:{port}"
        reply = httpx.post(base + "/api/chat", json={"message": "what time is it in Tokyo"}, timeout=60)
        assert reply.status_code == 200, reply.text
    finally:
        proc.send_signal(signal.SIGTERM)  # the server flushes the spans it still holds as it stops
        output = proc.communicate(timeout=60)[0].decode(errors="replace")
    assert "POST /api/chat" in _Collector.names, (_Collector.names, output[-2000:])
    assert "invoke_agent saber" in _Collector.names and any(n.startswith("execute_tool ") for n in _Collector.names), \
        sorted(set(_Collector.names))
