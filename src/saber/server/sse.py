"""A task's log as Server-Sent Events: ``id:`` sequence number, ``event:`` type, ``data:`` JSON."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from fastapi import Request
from sse_starlette import EventSourceResponse, ServerSentEvent

from saber.server.errors import ApiError
from saber.server.runs import RunManager, TaskRun

PING_SECONDS = 15.0

SSE_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {"description": "Server-Sent Events: `id: <sequence number>`, `event: <type>`, `data: <json>`; the last "
                         "event is `done`; `: ping` comments keep the connection alive.",
          "content": {"text/event-stream": {"schema": {"type": "string"}}}},
}


def last_event_id(request: Request) -> int:
    raw = request.headers.get("last-event-id", "").strip()
    if not raw:
        return 0
    if not raw.isdigit():
        raise ApiError(422, "invalid_request", f"Last-Event-ID: {raw[:40]!r} is not an event sequence number")
    return int(raw)


def stream_run(request: Request, manager: RunManager, run: TaskRun, *, after: int = 0,
               owns_task: bool = False) -> EventSourceResponse:
    """Replay ``run``'s events after ``after`` and follow it live. ``owns_task``: this connection
    started the task, so hanging up cancels it unless the request said ``detach``."""

    async def events() -> AsyncIterator[ServerSentEvent]:
        try:
            async for event in run.log.follow(after):
                yield ServerSentEvent(data=event.json, event=event.type, id=str(event.seq))
        finally:
            if owns_task and not run.detached and not run.finished:
                await manager.cancel(run)

    grace = float(request.app.state.settings.server_shutdown_grace) + 5.0
    return EventSourceResponse(events(), ping=PING_SECONDS, shutdown_grace_period=grace,
                               headers={"Cache-Control": "no-store", "X-Task-ID": run.task_id})
