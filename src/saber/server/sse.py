"""A task's log as Server-Sent Events: ``id:`` sequence number, ``event:`` type, ``data:`` JSON."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import anyio
from fastapi import Request
from sse_starlette import EventSourceResponse, ServerSentEvent

from saber.runs.manager import RunManager, TaskRun
from saber.server.errors import ApiError, shown

PING_SECONDS = 15.0
"""Seconds between keep-alive comments while a stream has nothing to send (``app.state.ping_seconds``)."""

CANCEL_WAIT_SECONDS = 10.0
"""How long a stream whose client hung up waits for its task's cancel to go out before it ends."""

SSE_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {"description": "Server-Sent Events: `id: <sequence number>`, `event: <type>`, `data: <json>`; the last "
                         "event is `done`; `: ping` comments keep the connection alive.",
          "content": {"text/event-stream": {"schema": {
              "type": "object", "required": ["data"], "description": "One event of the stream.",
              "properties": {"id": {"type": "string", "description": "The event's sequence number in its task."},
                             "event": {"type": "string", "description": "The event type (start, route, token, ..., done)."},
                             "data": {"type": "string", "description": "The event's JSON payload."}}}}}},
}


MAX_EVENT_ID = 2**63 - 1


def last_event_id(request: Request) -> int:
    """The ``Last-Event-ID`` header: an event sequence number (ASCII digits only: ``str.isdigit``
    takes ``'²'``, and ``int()`` refuses more than 4,300 digits), 0 when absent; else 400."""
    raw = request.headers.get("last-event-id", "").strip()
    if not raw:
        return 0
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 19 and int(raw) <= MAX_EVENT_ID):
        raise ApiError(400, "bad_request", f"Last-Event-ID: {shown(raw)} is not an event sequence number "
                                           f"(digits 0-9, at most {MAX_EVENT_ID})")
    return int(raw)


async def cancel_abandoned(manager: RunManager, run: TaskRun) -> None:
    """Cancel ``run`` from the clean-up of a stream whose client hung up. That clean-up runs while
    the stream's own task is being cancelled, which would cut an awaited cancel short (the
    distributed mode's reads Redis before it signals the worker): the cancel runs as a task of its
    own, which this waits for, shielded, at most ``CANCEL_WAIT_SECONDS``."""
    cancelling = manager.cancel_soon(run)
    with anyio.move_on_after(CANCEL_WAIT_SECONDS, shield=True):
        await asyncio.wait([cancelling])


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
                await cancel_abandoned(manager, run)

    grace = float(request.app.state.settings.server.shutdown_grace) + 5.0
    ping = float(getattr(request.app.state, "ping_seconds", PING_SECONDS))
    return EventSourceResponse(events(), ping=ping, shutdown_grace_period=grace,
                               headers={"Cache-Control": "no-store", "X-Task-ID": run.task_id})
