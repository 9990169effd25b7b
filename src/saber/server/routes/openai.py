"""Saber as an OpenAI-compatible model: ``POST /v1/chat/completions`` and ``GET /v1/models``.

The last user message is the query and the messages before it are the conversation; the
``model`` names a mode. Tools run inside Saber, so client-side ``tools`` are refused.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field
from sse_starlette import EventSourceResponse, ServerSentEvent

from saber.jsonsafe import dumps
from saber.llm.types import Message
from saber.server.auth import caller
from saber.server.deps import AgentDep, RunsDep, SettingsDep
from saber.server.errors import ERROR_RESPONSES, ApiError
from saber.server.routes.chat import check_message, start_chat
from saber.server.runs import RunManager, TaskRun
from saber.server.schemas import ChatRequest, Mode
from saber.server.sse import SSE_RESPONSE

router = APIRouter(prefix="/v1", tags=["openai-compatible"], responses=ERROR_RESPONSES)

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
    return "".join(p.text or "" for p in message.content if p.type == "text")


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


async def _start(body: CompletionRequest, request: Request, agent: AgentDep, runs: RunManager, limit: int) -> TaskRun:
    if body.tools:
        raise ApiError(400, "client_tools_unsupported",
                       "tools: Saber runs its own tools; a request carrying client-side tools cannot be answered "
                       "(send it without 'tools', and Saber picks from its own: GET /api/tools)")
    if body.model not in MODELS:
        raise ApiError(404, "model_not_found", f"model {body.model!r} does not exist: use one of {', '.join(MODELS)}")
    query, history = _split(body)
    check_message(query, limit, "messages[-1].content")
    user = caller(request, None)
    chat = ChatRequest.model_validate({"message": query, "mode": MODELS[body.model]})
    return await start_chat(agent, runs, user, chat, history=history, kind="openai")


@router.post("/chat/completions", response_model=Completion, responses=SSE_RESPONSE,
             summary="OpenAI-compatible chat completion (plain, or SSE chunks with stream: true)")
async def completions(body: CompletionRequest, request: Request, agent: AgentDep, runs: RunsDep,
                      settings: SettingsDep) -> Completion | EventSourceResponse:
    run = await _start(body, request, agent, runs, settings.server_max_message_chars)
    created = int(time.time())
    completion_id = f"chatcmpl-{run.task_id}"
    if body.stream:
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        return EventSourceResponse(_chunks(run, runs, body.model, completion_id, created, include_usage), ping=15.0)
    await runs.wait(run)
    done = run.log.last("done")
    assert done is not None
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

    sent = ""
    try:
        yield chunk({"role": "assistant", "content": ""})
        async for event in run.log.follow():
            if event.type == "token":
                sent += event.data["content"]
                yield chunk({"content": event.data["content"]})
            elif event.type == "done":
                answer = str(event.data["answer"])
                rest = answer[len(sent):] if answer.startswith(sent) else ("\n\n" + answer if sent else answer)
                if rest:
                    yield chunk({"content": rest})
                yield chunk({}, "length" if event.data.get("interrupted") else "stop")
                if include_usage:
                    yield chunk({}, usage=_usage(event.data), choices=False)
        yield ServerSentEvent(data="[DONE]")
    finally:
        if not run.finished:
            await runs.cancel(run)
