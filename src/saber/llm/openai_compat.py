"""``OpenAIChatModel``: any OpenAI-compatible chat-completions endpoint through the official client.

Works with OpenAI, DeepSeek, Qwen/DashScope, GLM, Doubao/Ark, Ollama, vLLM and llama.cpp's server.
To stay compatible it only sends what the caller asked for: ``tools`` and ``response_format`` only
when given, ``temperature`` only when set, and ``stream_options`` (for usage in streams) is dropped
for the rest of the model's life if the endpoint rejects it.

The client's own retries are off (``max_retries=0``): wrap the model in ``RetryingModel``.
Every failure becomes a one-line ``ModelError`` naming the endpoint.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Sequence
from typing import Any

import openai
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from saber.llm.base import ModelError
from saber.llm.endpoint_errors import connection_reason, error_message, one_line
from saber.llm.structured import StructuredOutput
from saber.llm.toolcalls import ToolCallAccumulator, tool_calls_from_openai
from saber.llm.types import (
    Completion,
    Message,
    ResponseFormat,
    StreamChunk,
    StreamEnd,
    TextDelta,
    Usage,
)
from saber.tools.base import Tool

_NO_KEY = "sk-no-key"
"""Sent when no key is configured: local servers (Ollama, vLLM, llama.cpp) ignore it, and the
client refuses to start without one; a real provider answers 401, which names the problem."""


class OpenAIChatModel:
    """A ``ChatModel`` for any OpenAI-compatible endpoint (OpenAI, DeepSeek, Qwen, GLM, Ollama,
    vLLM, llama.cpp server...) through the official ``openai`` client: ``base_url``, ``api_key``,
    ``model``. Native tool calls where the endpoint has them."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float | None = None,
        timeout: float = 60.0,
        stream_usage: bool = True,
        client: AsyncOpenAI | None = None,
        structured: str = "openai",
    ) -> None:
        """``stream_usage`` asks for a usage chunk at the end of streams (``stream_options``).
        ``client`` replaces the one built from ``base_url``/``api_key``/``timeout`` (for proxies,
        custom headers); it should have ``max_retries=0``. ``structured`` is the form a
        ``response_format`` is sent in (``saber.llm.structured``: "openai", "vllm", "ollama",
        "llamacpp", "auto", ...)."""
        if not model:
            raise ValueError("model name is empty")
        self.model = model
        self.name = f"openai:{model}"
        self.temperature = temperature
        self.timeout = timeout
        self._stream_usage = stream_usage
        if not api_key and base_url is None:
            # OpenAI itself: fall back to the usual variable. Never for another base_url, where it
            # would hand the user's OpenAI key to a third party.
            api_key = os.environ.get("OPENAI_API_KEY")
        self.client = client or AsyncOpenAI(
            base_url=base_url, api_key=api_key or _NO_KEY, timeout=timeout, max_retries=0
        )
        self.endpoint = str(self.client.base_url).rstrip("/")
        self.structured = StructuredOutput(structured, endpoint=self.endpoint)

    async def aclose(self) -> None:
        """Close the HTTP connections. Call it (or use ``async with``) before the event loop ends."""
        await self.client.close()

    async def __aenter__(self) -> OpenAIChatModel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- requests -----------------------------------------------------------------------------

    def _params(
        self,
        messages: Sequence[Message],
        tools: Sequence[Tool],
        temperature: float | None,
        max_tokens: int | None = None,
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.model, "messages": [to_openai_message(m) for m in messages]}
        if max_tokens:
            params["max_tokens"] = max_tokens
        temperature = self.temperature if temperature is None else temperature
        if temperature is not None:
            params["temperature"] = temperature
        if tools:
            params["tools"] = [t.to_openai() for t in tools]
        return params

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Tool] = (),
        response_format: ResponseFormat | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        params = self._params(messages, tools, temperature, max_tokens)
        constrained = await self.structured.add(params, response_format, self.client)
        try:
            response: ChatCompletion = await self.client.chat.completions.create(**as_sent(params), stream=False)
        except openai.APIStatusError as exc:
            if not (constrained and self.structured.refused(exc)):
                raise self._error(exc) from exc
            try:  # once more without the constraint the endpoint refused
                response = await self.client.chat.completions.create(
                    **as_sent(self._params(messages, tools, temperature, max_tokens)), stream=False)
            except openai.OpenAIError as again:
                raise self._error(again) from again
        except openai.OpenAIError as exc:
            raise self._error(exc) from exc
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise ModelError(f"model endpoint {self.endpoint} returned no answer{_body_error(response)}")
        choice = choices[0]
        message = choice.message
        return Completion(
            text=message.content or "",
            tool_calls=tool_calls_from_openai(message.tool_calls),
            usage=_usage(getattr(response, "usage", None)),
            finish_reason=choice.finish_reason,
            model=getattr(response, "model", None) or self.model,
        )

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Tool] = (),
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> AsyncIterator[StreamChunk]:
        params = self._params(messages, tools, temperature, max_tokens=max_tokens)
        stream = await self._open_stream(params)
        calls = ToolCallAccumulator()
        usage = Usage()
        finish_reason: str | None = None
        try:
            async for chunk in stream:
                if chunk.usage is not None:
                    usage = _usage(chunk.usage)
                for choice in chunk.choices or ():
                    if choice.index not in (0, None):
                        continue
                    delta = choice.delta
                    if delta is not None and delta.content:
                        yield TextDelta(content=delta.content)
                    for raw in (delta.tool_calls if delta is not None else None) or ():
                        function = raw.function
                        yield calls.add(
                            raw.index,
                            call_id=raw.id,
                            name=function.name if function is not None else None,
                            arguments=function.arguments if function is not None else None,
                        )
                    finish_reason = choice.finish_reason or finish_reason
        except openai.OpenAIError as exc:
            raise self._error(exc) from exc
        finally:
            await stream.close()
        yield StreamEnd(tool_calls=calls.finish(), usage=usage, finish_reason=finish_reason)

    async def _open_stream(self, params: dict[str, Any]) -> openai.AsyncStream[ChatCompletionChunk]:
        stream: openai.AsyncStream[ChatCompletionChunk]
        if self._stream_usage:
            try:
                stream = await self.client.chat.completions.create(
                    **as_sent(params), stream=True, stream_options={"include_usage": True}
                )
                return stream
            except openai.BadRequestError as exc:
                if "stream_options" not in str(exc.message) + str(exc.body):
                    raise self._error(exc) from exc
                self._stream_usage = False  # this endpoint does not know stream_options
            except openai.OpenAIError as exc:
                raise self._error(exc) from exc
        try:
            stream = await self.client.chat.completions.create(**as_sent(params), stream=True)
        except openai.OpenAIError as exc:
            raise self._error(exc) from exc
        return stream

    # -- errors -------------------------------------------------------------------------------

    def _error(self, exc: openai.OpenAIError) -> ModelError:
        where = f"model endpoint {self.endpoint}"
        if isinstance(exc, openai.APITimeoutError):
            return ModelError(f"{where} timed out after {self.timeout:g}s", retryable=True)
        if isinstance(exc, openai.APIConnectionError):
            return ModelError(f"{where} unreachable: {connection_reason(exc)}", retryable=True)
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            detail = error_message(exc.body) or one_line(exc.message)
            retryable = status in (408, 409, 429) or status >= 500
            verb = "is rate limiting" if status == 429 else "failed" if status >= 500 else "refused"
            return ModelError(f"{where} {verb}: {status} {detail}", retryable=retryable, status=status)
        if isinstance(exc, openai.APIResponseValidationError):
            return ModelError(f"{where} sent a response that is not a chat completion: {one_line(exc.message)}")
        if isinstance(exc, openai.APIError):
            # An error object in the middle of a stream: a server-side failure, worth another try.
            detail = error_message(exc.body) or one_line(exc.message)
            return ModelError(f"{where} failed mid-response: {detail}", retryable=True)
        return ModelError(f"{where}: {one_line(str(exc))}")


# -- wire format --------------------------------------------------------------------------------


def as_sent(params: dict[str, Any]) -> dict[str, Any]:
    """``create``'s keyword arguments with the request's fields in ``extra_body``, which the client
    sends as they are. Passed as typed arguments, they would go through the client's per-request
    transform, which walks every message of the history against the TypedDict unions of the
    request type to rename aliased keys and encode files and dates: the identity for the plain
    JSON that ``_params`` builds (``test_openai_body`` checks it is), and about a sixth of the CPU
    of a run served by ``saber serve``. The body sent is the same JSON either way."""
    fields = {k: v for k, v in params.items() if k not in ("model", "extra_body")}
    return {"model": params["model"], "messages": [], "extra_body": {**fields, **params.get("extra_body", {})}}



def to_openai_message(message: Message) -> dict[str, Any]:
    """One ``Message`` as an OpenAI chat message dict."""
    out: dict[str, Any] = {"role": message.role}
    if message.role == "assistant" and message.tool_calls:
        out["content"] = message.content or None
        out["tool_calls"] = [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": _json(call.arguments)}}
            for call in message.tool_calls
        ]
        return out
    out["content"] = message.content
    if message.role == "tool":
        if message.tool_call_id is not None:
            out["tool_call_id"] = message.tool_call_id
    elif message.name and message.role in ("user", "system"):
        out["name"] = message.name
    return out


def _json(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, ensure_ascii=False)


def _usage(raw: object) -> Usage:
    if raw is None:
        return Usage()
    prompt = getattr(raw, "prompt_tokens", None)
    completion = getattr(raw, "completion_tokens", None)
    return Usage(
        prompt_tokens=prompt if isinstance(prompt, int) else 0,
        completion_tokens=completion if isinstance(completion, int) else 0,
    )


def _body_error(response: object) -> str:
    extra = getattr(response, "model_extra", None)
    detail = error_message(extra) if isinstance(extra, dict) and "error" in extra else ""
    return f": {detail}" if detail else ""
