"""A chat model wrapped in OpenTelemetry ``chat`` spans (see ``saber.observability.tracing``)."""

from __future__ import annotations

from typing import Any

from saber.llm.limits import max_tokens_kwarg
from saber.llm.types import StreamEnd
from saber.observability import tracing


class TracedModel:
    """Wraps a chat model: while tracing is on, a ``chat`` span per call with the GenAI attributes
    (``gen_ai.request.model``, ``gen_ai.usage.input_tokens`` / ``output_tokens``); otherwise the
    calls pass straight through."""

    def __init__(self, model: Any) -> None:
        self.wrapped = model
        self.name = model.name

    def __getattr__(self, item: str) -> Any:
        return getattr(self.wrapped, item)

    def _attributes(self) -> dict[str, Any]:
        return {"gen_ai.operation.name": "chat", "gen_ai.request.model": self.name}

    async def complete(self, messages: Any, **options: Any) -> Any:
        extra = max_tokens_kwarg(self.wrapped.complete, options.pop("max_tokens", None))
        if not tracing.enabled():
            return await self.wrapped.complete(messages, **options, **extra)
        with tracing.span(f"chat {self.name}", kind="CLIENT", **self._attributes()) as current:
            completion = await self.wrapped.complete(messages, **options, **extra)
            _usage(current, completion.usage, completion.model)
            return completion

    async def stream(self, messages: Any, **options: Any) -> Any:
        extra = max_tokens_kwarg(self.wrapped.stream, options.pop("max_tokens", None))
        if not tracing.enabled():
            async for chunk in self.wrapped.stream(messages, **options, **extra):
                yield chunk
            return
        # not made current: a generator may be closed from another task than the one it began in
        current = tracing.get_tracer().start_span(f"chat {self.name}", kind=tracing.span_kind("CLIENT"), attributes=self._attributes())
        try:
            async for chunk in self.wrapped.stream(messages, **options, **extra):
                if isinstance(chunk, StreamEnd):
                    _usage(current, chunk.usage, None)
                yield chunk
        finally:
            current.end()


def _usage(current: Any, usage: Any, model: str | None) -> None:
    if current is None:
        return
    current.set_attribute("gen_ai.usage.input_tokens", int(usage.prompt_tokens))
    current.set_attribute("gen_ai.usage.output_tokens", int(usage.completion_tokens))
    if model:
        current.set_attribute("gen_ai.response.model", model)
