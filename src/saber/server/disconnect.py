"""Work a request does that stops when its client hangs up: nobody is left to read the answer."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from starlette.types import Message

from saber.server.errors import ApiError

T = TypeVar("T")


async def cancel_on_disconnect(receive: Callable[[], Awaitable[Message]], work: Coroutine[Any, Any, T], *,
                               on_disconnect: Callable[[], None] | None = None) -> T:
    """``work``'s result; if the client hangs up first (``receive`` gives ``http.disconnect``),
    ``on_disconnect()`` is called (to stop what runs in threads), ``work`` is cancelled and waited
    for, and an ApiError 499 is raised (no client is left to receive it). Call it once the request's
    body has been read: ``receive`` then only reports the disconnect."""

    async def hung_up() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    watcher = asyncio.ensure_future(hung_up())
    task = asyncio.ensure_future(work)
    try:
        await asyncio.wait([watcher, task], return_when=asyncio.FIRST_COMPLETED)
        if not task.done():
            if on_disconnect is not None:
                on_disconnect()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            raise ApiError(499, "client_closed_request", "the client closed the connection; the work was stopped")
        return task.result()
    finally:
        watcher.cancel()
        task.cancel()
        await asyncio.gather(watcher, task, return_exceptions=True)
