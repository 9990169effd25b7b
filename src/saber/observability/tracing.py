"""OpenTelemetry traces (the ``otel`` extra), off unless ``otel_endpoint`` is set or a tracer
provider is installed (``enable``).

In one process (``saber serve`` without the distributed mode) the run span (``LocalRunTrace``)
sits under the request's span. One trace goes from the API node through the queue to the worker: the request's span context is
stored with the queued run (W3C ``traceparent``) and the worker's run span continues it. Spans:
the HTTP request (FastAPI makes it, with its dependency and endpoint spans), the enqueue, the run (``invoke_agent``), and per graph node one span with a
tool-call span inside (``execute_tool``), built from the run's events; the run span carries the
GenAI semantic-convention attributes (``gen_ai.operation.name``, ``gen_ai.request.model``,
``gen_ai.usage.input_tokens``, ``gen_ai.usage.output_tokens``), and each model call a ``chat``
span (``saber.llm.traced.TracedModel``, wrapped around the agent's model) with its own model and tokens.

Without the extra installed and nothing configured, every function here is a cheap no-op.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from typing import Any

from saber.config import ConfigError, Settings
from saber.redact import redact

log = logging.getLogger(__name__)

_enabled = False
_exporting: Any = None
"""The provider ``setup`` made (it exports over OTLP): ``flush`` sends what it still holds."""


def enabled() -> bool:
    return _enabled


def enable(provider: Any = None) -> None:
    """Turn tracing on with ``provider`` (an SDK ``TracerProvider``; tests pass one with an
    in-memory exporter), or with the globally configured one."""
    global _enabled
    if provider is not None:
        from opentelemetry import trace

        trace.set_tracer_provider(provider)
    _enabled = True


def setup(settings: Settings) -> None:
    """``otel_endpoint`` set: export spans over OTLP/HTTP to it (needs ``pip install 'saber[otel]'``)."""
    endpoint = settings.otel.endpoint
    if not endpoint or _enabled:
        return
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        raise ConfigError("otel.endpoint is set but the OpenTelemetry SDK is not installed: "
                          "pip install 'saber[otel]'") from None
    global _exporting

    class ReportingExporter(OTLPSpanExporter):
        """Says once, naming the endpoint, when spans cannot be sent (and again when they can)."""

        failing = False

        def export(self, spans: Any) -> Any:
            result = super().export(spans)
            failed = result.name != "SUCCESS"
            if failed and not self.failing:
                log.warning("traces: could not export %d span(s) to %s (is the collector running?); "
                            "requests are not affected", len(spans), url)
            elif self.failing and not failed:
                log.warning("traces: exporting to %s again", url)
            self.failing = failed
            return result

    url = endpoint.rstrip("/") + "/v1/traces"
    provider = TracerProvider(resource=Resource.create({"service.name": settings.otel.service_name}))
    provider.add_span_processor(BatchSpanProcessor(ReportingExporter(endpoint=url, timeout=3)))
    enable(provider)
    _exporting = provider


def flush(timeout_seconds: float = 2.0) -> None:
    """Export the spans still batched (blocking: call it in a thread). A process must not rely on
    the SDK's exit hook: uvicorn ends a SIGTERM'd server by raising the signal again, and no
    exit hook runs then."""
    if _exporting is not None:
        _exporting.force_flush(int(timeout_seconds * 1000))


def get_tracer() -> Any:
    from opentelemetry import trace

    return trace.get_tracer("saber")


@contextlib.contextmanager
def span(name: str, *, kind: str = "INTERNAL", parent: str = "", **attributes: Any) -> Iterator[Any]:
    """A span made current for the block (None when tracing is off). ``parent``: a ``traceparent``
    to continue (a run taken from the queue)."""
    if not _enabled:
        yield None
        return
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    context = TraceContextTextMapPropagator().extract({"traceparent": parent}) if parent else None
    with get_tracer().start_as_current_span(name, context=context, kind=getattr(trace.SpanKind, kind),
                                         attributes={k: v for k, v in attributes.items() if v is not None}) as current:
        yield current


def traceparent() -> str:
    """The current span context as a W3C ``traceparent`` ('' when tracing is off)."""
    if not _enabled:
        return ""
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier)
    return carrier.get("traceparent", "")


class RunSpans:
    """Spans of one run's graph nodes and tool calls, from its events, under the current span."""

    def __init__(self, run_span: Any) -> None:
        self.run_span = run_span
        self._started: dict[str, int] = {}

    def observe(self, type_: str, data: dict[str, Any]) -> None:
        if self.run_span is None:
            return
        if type_ == "node_start":
            self._started[str(data.get("id"))] = time.time_ns()
        elif type_ == "node_done":
            self._node(data)
        elif type_ == "tool_call":  # tool mode: one call, no graph nodes
            self._tool_call(data)
        elif type_ == "done":
            usage = data.get("usage") or {}
            for key, value in (("gen_ai.request.model", data.get("model")), ("saber.mode", data.get("mode")),
                               ("gen_ai.usage.input_tokens", usage.get("prompt_tokens")),
                               ("gen_ai.usage.output_tokens", usage.get("completion_tokens")),
                               ("saber.interrupted", bool(data.get("interrupted")))):
                if value is not None:
                    self.run_span.set_attribute(key, value)

    def _node(self, data: dict[str, Any]) -> None:
        from opentelemetry import trace

        end = time.time_ns()
        start = self._started.pop(str(data.get("id")), end - int(float(data.get("duration_ms") or 0) * 1e6))
        tool = str(data.get("tool", ""))
        tracer = get_tracer()
        parent = trace.set_span_in_context(self.run_span)
        node = tracer.start_span(f"node {data.get('id')}", context=parent, start_time=start,
                                 attributes={"saber.node.id": str(data.get("id")), "saber.node.status": str(data.get("status")),
                                             "saber.node.attempts": int(data.get("attempts") or 0)})
        call = tracer.start_span(f"execute_tool {tool}", context=trace.set_span_in_context(node), start_time=start,
                                 attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool})
        if data.get("status") != "done":
            call.set_status(trace.Status(trace.StatusCode.ERROR, redact(str(data.get("error") or data.get("status")))))
        call.end(end_time=end)
        node.end(end_time=end)

    def _tool_call(self, data: dict[str, Any]) -> None:
        from opentelemetry import trace

        end = time.time_ns()
        tool = str(data.get("tool_name", ""))
        call = get_tracer().start_span(f"execute_tool {tool}", context=trace.set_span_in_context(self.run_span),
                                    start_time=end - int(float(data.get("duration_ms") or 0) * 1e6),
                                    attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool})
        if data.get("error"):
            call.set_status(trace.Status(trace.StatusCode.ERROR, redact(str(data["error"]))))
        call.end(end_time=end)


RUN_SPAN = "invoke_agent saber"


def run_attributes(task_id: str, **extra: Any) -> dict[str, Any]:
    """The GenAI attributes of a run's span, wherever the run happens (a worker, one server)."""
    return {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "saber", "saber.task_id": task_id, **extra}


class LocalRunTrace:
    """The in-process server's run span (``invoke_agent``): a run's events come from a stream whose
    first step runs in the request's task and the rest in a task of its own, so the span is made
    current in each (``current``) rather than in one block; ``end`` closes it. A no-op when off."""

    def __init__(self, task_id: str, kind: str) -> None:
        self.span: Any = None
        if _enabled:
            self.span = get_tracer().start_span(RUN_SPAN, kind=span_kind("INTERNAL"),
                                             attributes=run_attributes(task_id, **{"saber.run_kind": kind}))
        self.spans = RunSpans(self.span)

    @contextlib.contextmanager
    def current(self) -> Iterator[None]:
        if self.span is None:
            yield
            return
        from opentelemetry import context, trace

        token = context.attach(trace.set_span_in_context(self.span))
        try:
            yield
        finally:
            context.detach(token)

    def observe(self, type_: str, data: dict[str, Any]) -> None:
        self.spans.observe(type_, data)

    def end(self) -> None:
        if self.span is not None:
            self.span.end()
            self.span = None


def span_kind(name: str) -> Any:
    from opentelemetry import trace

    return getattr(trace.SpanKind, name)
