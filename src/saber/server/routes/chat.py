"""``POST /api/chat`` (to the end, JSON) and ``POST /api/chat/stream`` (SSE)."""

from __future__ import annotations

import json

from fastapi import APIRouter, Request, Response
from sse_starlette import EventSourceResponse

from saber.agent import Agent
from saber.redact import redacted
from saber.runs.manager import RunManager, TaskRun
from saber.runs.request import HistoryTurn
from saber.server.auth import caller
from saber.server.deps import AgentDep, RunsDep, SettingsDep
from saber.server.errors import ERROR_RESPONSES, ApiError
from saber.server.schemas import ChatRequest, ChatResponse
from saber.server.sse import SSE_RESPONSE, stream_run
from saber.tools.errors import ToolError, UnknownToolError

router = APIRouter(tags=["chat"], responses=ERROR_RESPONSES)


def check_message(text: str, limit: int, field: str = "message") -> None:
    if len(text) > limit:
        raise ApiError(413, "too_large", f"{field}: {len(text)} characters, over the limit of {limit}")
    if not text.strip():
        raise ApiError(422, "invalid_request", f"{field}: must not be blank")
    if (nul := text.find("\x00")) >= 0:
        raise ApiError(422, "invalid_request", f"{field}: holds a NUL character (\\u0000) at position {nul}")


async def start_chat(agent: Agent, runs: RunManager, user: str, body: ChatRequest,
                     history: list[HistoryTurn] | None = None, kind: str = "chat") -> TaskRun:
    """Start the run ``body`` asks for: its ``RunRequest`` is the validated body (with the
    conversation an OpenAI-style client sent before it, ``history``)."""
    task_id = body.task_id or agent.new_task_id()
    run = TaskRun(task_id=task_id, user_id=user, kind=kind, query=await redacted(body.message),
                  request=body.run_request(history), detached=body.detach)
    try:
        return await runs.start(run)
    except UnknownToolError as exc:
        raise ApiError(422, "invalid_request", f"selected_tools: {exc}") from None
    except (ValueError, ToolError) as exc:
        status = 409 if "already" in str(exc) else 422
        raise ApiError(status, "conflict" if status == 409 else "invalid_request", str(exc)) from None


def answer_json(run: TaskRun) -> bytes:
    """A finished run as a ``ChatResponse`` in JSON, with each event's data as the log already
    encoded it (building the pydantic models and validating them again cost more than the run)."""
    done = run.log.last("done")
    assert done is not None
    d = done.data
    head = json.dumps({"answer": d["answer"], "mode": d["mode"], "task_id": d["task_id"],
                       "usage": {k: int(v) for k, v in (d.get("usage") or {}).items()}, "model": d.get("model"),
                       "interrupted": bool(d.get("interrupted")), "answer_template": bool(d.get("answer_template"))},
                      ensure_ascii=False, allow_nan=False)
    events = ",".join(f'{{"id":{e.seq},"type":{json.dumps(e.type)},"data":{e.json}}}' for e in run.log.events)
    return f'{head[:-1]},"events":[{events}]}}'.encode()


@router.post("/api/chat", response_model=ChatResponse, summary="Run a request to the end")
async def chat(body: ChatRequest, request: Request, agent: AgentDep, runs: RunsDep, settings: SettingsDep) -> Response:
    user = caller(request, body.user_id)
    check_message(body.message, settings.server.max_message_chars)
    run = await start_chat(agent, runs, user, body.model_copy(update={"detach": False}))
    await runs.wait_or_cancel(run, request.receive)
    return Response(answer_json(run), media_type="application/json")


@router.post("/api/chat/stream", response_class=EventSourceResponse, responses=SSE_RESPONSE,
             summary="Run a request, streaming its events as SSE")
async def chat_stream(body: ChatRequest, request: Request, agent: AgentDep, runs: RunsDep,
                      settings: SettingsDep) -> EventSourceResponse:
    user = caller(request, body.user_id)
    check_message(body.message, settings.server.max_message_chars)
    run = await start_chat(agent, runs, user, body)
    return stream_run(request, runs, run, owns_task=True)
