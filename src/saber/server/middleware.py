"""The outer layer of every request: a request id, the body-size limit and one access-log line."""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable

from fastapi import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from saber.server.errors import error_response

access_log = logging.getLogger("saber.server.access")

_SAFE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


class BodyTooLarge(HTTPException):
    """An HTTPException so that FastAPI's body parsing lets it through as a 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body over the limit of {limit} bytes")


class RequestContext:
    """Pure ASGI (no buffering), so SSE streams pass straight through and their duration is the
    stream's. ``limit_for(path)`` gives the largest body a path accepts."""

    def __init__(self, app: ASGIApp, *, limit_for: Callable[[str], int]) -> None:
        self.app = app
        self.limit_for = limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(b"x-request-id", b"").decode("latin-1")
        request_id = given if _SAFE_ID.match(given) else uuid.uuid4().hex
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        started = time.perf_counter()
        status = 0
        limit = self.limit_for(scope["path"])

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", request_id.encode())]
            await send(message)

        try:
            length = dict(scope.get("headers") or []).get(b"content-length")
            if length is not None and length.isdigit() and int(length) > limit:
                raise BodyTooLarge(limit)
            await self.app(scope, _limited(receive, limit), send_with_id)
        except BodyTooLarge as exc:
            if status == 0:
                response = error_response(413, "too_large", str(exc.detail), request_id)
                await response(scope, receive, send_with_id)
        finally:
            route = getattr(scope.get("route"), "path", None) or scope["path"]
            access_log.info("request_id=%s user=%s method=%s route=%s status=%s duration_ms=%.1f", request_id,
                            state.get("user_id", "-"), scope["method"], route, status,
                            (time.perf_counter() - started) * 1000)


def _limited(receive: Receive, limit: int) -> Receive:
    """A chunked body has no Content-Length: count what arrives instead."""
    seen = 0

    async def wrapped() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                raise BodyTooLarge(limit)
        return message

    return wrapped
