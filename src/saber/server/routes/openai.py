"""Saber as an OpenAI-compatible model: ``POST /v1/chat/completions``, ``GET /v1/models`` and
``GET /v1/models/{id}``.

The ``model`` names a mode; the request's body is read as ``openai_request`` says (the query, the
conversation, what is refused, and the ``X-Saber-Ignored`` header naming what is accepted but not
applied). Tools run inside Saber, so client-side ``tools`` are refused. A request whose model
failed with no rule answer to give instead is an error (502, or an error event ending the
stream), not a reply. Errors here carry OpenAI's ``type`` and ``param`` besides ``code`` and ``message``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ValidationError
from sse_starlette import EventSourceResponse, ServerSentEvent

from saber.config import Settings
from saber.jsonsafe import dumps
from saber.runs.manager import RunManager, TaskRun
from saber.server.auth import caller
from saber.server.deps import AgentDep, RunsDep, SettingsDep
from saber.server.errors import OPENAI_ERROR_RESPONSES, ApiError, OpenAIErrorBody
from saber.server.routes.chat import check_message, start_chat
from saber.server.routes.openai_request import (
    CompletionRequest,
    check_supported,
    check_text,
    last_user,
    split,
)
from saber.server.routes.openai_request import ignored as ignored_fields
from saber.server.routes.openai_stream import (
    ANSWER_RESTARTED,
    CompletionText,
    error_chunk,
    model_failure,
    restarted_error,
)
from saber.server.schemas import ChatRequest, Mode
from saber.server.sse import SSE_RESPONSE, cancel_abandoned

router = APIRouter(prefix="/v1", tags=["openai-compatible"], responses=OPENAI_ERROR_RESPONSES)

IGNORED_HEADER = "X-Saber-Ignored"
"""Names each request field that was accepted but not applied (``openai_request.ignored``)."""

MODEL_FAILED = "model_failed"
"""The error code of a request whose language model failed and that has no rule answer."""

MODELS: dict[str, Mode | None] = {"saber": None, "saber-chat": "chat", "saber-tool": "tool", "saber-rag": "rag",
                                  "saber-react": "react"}


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


def _usage(data: dict[str, Any]) -> CompletionUsage:
    u = data.get("usage") or {}
    return CompletionUsage(prompt_tokens=int(u.get("prompt_tokens", 0)), completion_tokens=int(u.get("completion_tokens", 0)),
                           total_tokens=int(u.get("total_tokens", 0)))


@router.get("/models", response_model=ModelList, summary="The modes, as models")
async def models(request: Request) -> ModelList:
    caller(request)
    return ModelList(data=[ModelCard(id=name) for name in MODELS])


@router.get("/models/{model_id}", response_model=ModelCard, summary="One mode, as a model")
async def model(model_id: str, request: Request) -> ModelCard:
    caller(request)
    _check_model(model_id)
    return ModelCard(id=model_id)


def _check_model(name: str) -> None:
    if name not in MODELS:
        raise ApiError(404, "model_not_found", f"model {name!r} does not exist: use one of {', '.join(MODELS)}",
                       param="model")


async def _start(body: CompletionRequest, request: Request, agent: AgentDep, runs: RunManager,
                 settings: Settings) -> TaskRun:
    if body.tools:
        raise ApiError(400, "client_tools_unsupported",
                       "tools: Saber runs its own tools; a request carrying client-side tools cannot be answered "
                       "(send it without 'tools', and Saber picks from its own: GET /api/tools)", param="tools")
    _check_model(body.model)
    check_supported(body)
    check_text(body)
    query, history = split(body)
    check_message(query, settings.server.max_message_chars, "messages[-1].content")
    user = caller(request, None)
    try:
        chat = ChatRequest.model_validate({"message": query, "mode": MODELS[body.model]})
    except ValidationError as exc:
        where = f"messages[{last_user(body)}].content"
        raise ApiError(422, "invalid_request", f"{where}: {exc.errors()[0]['msg']}", param=where) from None
    return await start_chat(agent, runs, user, chat, history=history, kind="openai")


@router.post("/chat/completions", response_model=Completion,
             responses={**SSE_RESPONSE, 502: {"model": OpenAIErrorBody, "description": "the language model failed and "
                                                "there is no rule answer (streamed: an error event ends the stream)"}},
             summary="OpenAI-compatible chat completion (plain, or SSE chunks with stream: true)")
async def completions(body: CompletionRequest, request: Request, response: Response, agent: AgentDep, runs: RunsDep,
                      settings: SettingsDep) -> Completion | EventSourceResponse:
    run = await _start(body, request, agent, runs, settings)
    created = int(time.time())
    completion_id = f"chatcmpl-{run.task_id}"
    ignored = ignored_fields(body, agent.settings.llm.max_tokens_answer)
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
