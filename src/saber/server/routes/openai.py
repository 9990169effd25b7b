"""Saber as an OpenAI-compatible model: ``POST /v1/chat/completions`` and ``GET /v1/models``.

The last user message is the query and the messages before it are the conversation; the
``model`` names a mode. Tools run inside Saber, so client-side ``tools`` are refused, and so is
what Saber cannot honour (``n`` > 1, a ``response_format`` other than text, content other than
text). A ``max_tokens`` below the server's answer limit is accepted (clients send one by habit)
and named in the ``X-Saber-Ignored`` response header: the server's limit bounds the answer. A request whose model failed with no
rule answer to give instead is an error (502, or an error event ending the stream), not a reply.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field
from sse_starlette import EventSourceResponse, ServerSentEvent

from saber.config import Settings
from saber.jsonsafe import dumps
from saber.llm.types import Message
from saber.server.auth import caller
from saber.server.deps import AgentDep, RunsDep, SettingsDep
from saber.server.errors import ERROR_RESPONSES, ApiError, ErrorBody
from saber.server.routes.chat import check_message, start_chat
from saber.server.routes.openai_stream import (
    ANSWER_RESTARTED,
    CompletionText,
    error_chunk,
    model_failure,
    restarted_error,
)
from saber.server.runs import RunManager, TaskRun
from saber.server.schemas import ChatRequest, Mode
from saber.server.sse import SSE_RESPONSE, cancel_abandoned

router = APIRouter(prefix="/v1", tags=["openai-compatible"], responses=ERROR_RESPONSES)

IGNORED_HEADER = "X-Saber-Ignored"
"""Names a request parameter that was accepted but not applied (a lower max_tokens)."""

MODEL_FAILED = "model_failed"
"""The error code of a request whose language model failed and that has no rule answer."""

MODELS: dict[str, Mode | None] = {"saber": None, "saber-chat": "chat", "saber-tool": "tool", "saber-rag": "rag",
                                  "saber-react": "react"}


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[ContentPart] | None = None


class StreamOptions(BaseModel):
    include_usage: bool = False


class CompletionRequest(BaseModel):
    """The OpenAI request; sampling fields (temperature, ...) are accepted and ignored."""

    model_config = ConfigDict(extra="allow")
    model: str = Field(description="saber (routed), saber-chat, saber-tool, saber-rag or saber-react.")
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    tools: list[dict[str, Any]] | None = None
    user: str | None = Field(None, max_length=128)
    n: int | None = Field(None, ge=1, description="1 only: Saber writes one answer.")
    response_format: dict[str, Any] | None = Field(None, description='{"type": "text"} only.')
    max_tokens: int | None = Field(None, ge=1, description="Accepted; the answer is bounded by the server's "
                                   "llm.max_tokens_answer (a lower value is named in the X-Saber-Ignored header).")
    max_completion_tokens: int | None = Field(None, ge=1, description="As max_tokens.")


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int = 0
    owned_by: str = "saber"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


class CompletionMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int = 0
    message: CompletionMessage
    finish_reason: str


class CompletionUsage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class Completion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: CompletionUsage


def _text(message: ChatMessage) -> str:
    if message.content is None:
        return ""
    if isinstance(message.content, str):
        return message.content
    return "".join(p.text or "" for p in message.content)


def _ignored_limit(body: CompletionRequest, answer_max_tokens: int) -> str | None:
    """What the ``X-Saber-Ignored`` header says of a ``max_tokens`` below the server's answer limit:
    clients send one by habit, so it is not refused, but the answer is bounded by the server's."""
    for name in ("max_tokens", "max_completion_tokens"):
        value = getattr(body, name)
        if value is not None and value < answer_max_tokens:
            return f"{name}={value}: answers are bounded by llm.max_tokens_answer={answer_max_tokens}"
    return None


def _check_supported(body: CompletionRequest) -> None:
    """Refuse (400) what Saber would otherwise drop without a word."""
    if body.n is not None and body.n > 1:
        raise ApiError(400, "unsupported", f"n: n > 1 is not supported (Saber writes one answer; {body.n} were asked)")
    if body.response_format is not None and body.response_format.get("type") != "text":
        raise ApiError(400, "unsupported", f"response_format: {dumps(body.response_format)[:80]} is not supported "
                                           '(Saber answers in text: send none, or {"type": "text"})')
    for i, message in enumerate(body.messages):
        for j, part in enumerate(message.content if isinstance(message.content, list) else []):
            if part.type != "text":
                raise ApiError(400, "unsupported", f"messages[{i}].content[{j}]: only text content is supported "
                                                   f"(got {part.type!r})")


def _split(body: CompletionRequest) -> tuple[str, list[Message]]:
    """The query (the last user message) and the conversation before it."""
    last = next((i for i in range(len(body.messages) - 1, -1, -1) if body.messages[i].role == "user"), None)
    if last is None:
        raise ApiError(422, "invalid_request", "messages: no user message to answer")
    history: list[Message] = []
    for m in body.messages[:last]:
        if m.role == "user":
            history.append(Message.user(_text(m)))
        elif m.role == "assistant" and _text(m):
            history.append(Message.assistant(_text(m)))
    return _text(body.messages[last]), history


def _usage(data: dict[str, Any]) -> CompletionUsage:
    u = data.get("usage") or {}
    return CompletionUsage(prompt_tokens=int(u.get("prompt_tokens", 0)), completion_tokens=int(u.get("completion_tokens", 0)),
                           total_tokens=int(u.get("total_tokens", 0)))


@router.get("/models", response_model=ModelList, summary="The modes, as models")
async def models(request: Request) -> ModelList:
    caller(request)
    return ModelList(data=[ModelCard(id=name) for name in MODELS])


async def _start(body: CompletionRequest, request: Request, agent: AgentDep, runs: RunManager,
                 settings: Settings) -> TaskRun:
    if body.tools:
        raise ApiError(400, "client_tools_unsupported",
                       "tools: Saber runs its own tools; a request carrying client-side tools cannot be answered "
                       "(send it without 'tools', and Saber picks from its own: GET /api/tools)")
    if body.model not in MODELS:
        raise ApiError(404, "model_not_found", f"model {body.model!r} does not exist: use one of {', '.join(MODELS)}")
    _check_supported(body)
    query, history = _split(body)
    check_message(query, settings.server_max_message_chars, "messages[-1].content")
    user = caller(request, None)
    chat = ChatRequest.model_validate({"message": query, "mode": MODELS[body.model]})
    return await start_chat(agent, runs, user, chat, history=history, kind="openai")


@router.post("/chat/completions", response_model=Completion,
             responses={**SSE_RESPONSE, 502: {"model": ErrorBody, "description": "the language model failed and "
                                                "there is no rule answer (streamed: an error event ends the stream)"}},
             summary="OpenAI-compatible chat completion (plain, or SSE chunks with stream: true)")
async def completions(body: CompletionRequest, request: Request, response: Response, agent: AgentDep, runs: RunsDep,
                      settings: SettingsDep) -> Completion | EventSourceResponse:
    run = await _start(body, request, agent, runs, settings)
    created = int(time.time())
    completion_id = f"chatcmpl-{run.task_id}"
    ignored = _ignored_limit(body, agent.settings.llm_max_tokens_answer)
    if ignored is not None:
        response.headers[IGNORED_HEADER] = ignored
    if body.stream:
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        return EventSourceResponse(_chunks(run, runs, body.model, completion_id, created, include_usage), ping=15.0,
                                   headers={IGNORED_HEADER: ignored} if ignored is not None else None)
    await runs.wait_or_cancel(run, request.receive)
    done = run.log.last("done")
    assert done is not None
    failure = model_failure(run.log.events)
    if failure is not None:
        raise ApiError(502, MODEL_FAILED, failure)
    return Completion(id=completion_id, created=created, model=body.model, usage=_usage(done.data),
                      choices=[Choice(message=CompletionMessage(content=done.data["answer"]),
                                      finish_reason="length" if done.data.get("interrupted") else "stop")])


async def _chunks(run: TaskRun, runs: RunManager, model: str, completion_id: str, created: int,
                  include_usage: bool) -> AsyncIterator[ServerSentEvent]:
    def chunk(delta: dict[str, Any], finish: str | None = None, usage: CompletionUsage | None = None,
              choices: bool = True) -> ServerSentEvent:
        body: dict[str, Any] = {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model,
                                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if choices else []}
        if usage is not None:
            body["usage"] = usage.model_dump()
        return ServerSentEvent(data=dumps(body))

    text = CompletionText()
    try:
        yield chunk({"role": "assistant", "content": ""})
        async for event in run.log.follow():
            if event.type != "done":
                if content := text.on_event(event):
                    yield chunk({"content": content})
                continue
            failure = model_failure(run.log.events)
            if failure is not None:  # the openai client raises APIError on this event
                yield ServerSentEvent(data=dumps(error_chunk(failure, MODEL_FAILED)))
                return
            rest = text.finish(str(event.data["answer"]))
            if rest is None:
                yield ServerSentEvent(data=dumps(error_chunk(restarted_error(run.task_id), ANSWER_RESTARTED)))
                return
            if rest:
                yield chunk({"content": rest})
            yield chunk({}, "length" if event.data.get("interrupted") else "stop")
            if include_usage:
                yield chunk({}, usage=_usage(event.data), choices=False)
        yield ServerSentEvent(data="[DONE]")
    finally:
        if not run.finished:
            await cancel_abandoned(runs, run)
