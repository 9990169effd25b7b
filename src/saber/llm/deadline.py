"""The current request's deadline as everything inside it sees it, and its pauses.

``request_deadline(at)`` sets the loop time by which a request's model calls must be over (read
with ``time_left``); ``within_deadline`` (``saber.agent.deadline``) also ties the request's hard
stop to it. Time spent waiting for a person — an approval — is not the request's to spend:
inside ``deadline_paused()`` the clock stops (the hard stop is lifted, ``approval.timeout``
bounds the wait) and when the last wait ends it runs on from where it stopped, so an approval
answered after ten minutes leaves the request as much time as it had when it asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass
class _Clock:
    at: float
    """Loop time by which model calls must be over (while running)."""
    stop: asyncio.Timeout | None = None
    """The request's hard stop: lifted while the clock is paused, set again when it resumes."""
    waiting: int = 0
    paused_at: float = 0.0
    stop_left: float | None = None

    def pause(self, now: float) -> None:
        self.waiting += 1
        if self.waiting > 1:
            return  # already stopped by another wait
        self.paused_at = now
        if self.stop is not None and not self.stop.expired():
            when = self.stop.when()
            self.stop_left = None if when is None else when - now
            self._reschedule(None)

    def resume(self, now: float) -> None:
        self.waiting -= 1
        if self.waiting:
            return  # another wait is still on: the clock stays stopped
        self.at += now - self.paused_at
        if self.stop is not None and not self.stop.expired():
            self._reschedule(None if self.stop_left is None else now + self.stop_left)

    def _reschedule(self, when: float | None) -> None:
        assert self.stop is not None
        with contextlib.suppress(RuntimeError):  # the request is over (its scope exited): nothing to move
            self.stop.reschedule(when)

    def left(self, now: float) -> float:
        return self.at - (self.paused_at if self.waiting else now)


_CLOCK: contextvars.ContextVar[_Clock | None] = contextvars.ContextVar("saber_request_deadline", default=None)


@contextlib.contextmanager
def request_deadline(at: float | None, *, stop: asyncio.Timeout | None = None) -> Iterator[None]:
    """Model calls made inside (and in tasks started inside) end by loop time ``at``; ``stop``
    (the request's hard stop) moves with it when a wait pauses the clock."""
    token = _CLOCK.set(None if at is None else _Clock(at=at, stop=stop))
    try:
        yield
    finally:
        _CLOCK.reset(token)


def time_left() -> float | None:
    """Seconds the current request has left for model calls, or None without a deadline."""
    clock = _CLOCK.get()
    if clock is None:
        return None
    return clock.left(asyncio.get_running_loop().time())


@contextlib.contextmanager
def deadline_paused() -> Iterator[None]:
    """The request's clock stops while inside (waiting for a person, not working)."""
    clock = _CLOCK.get()
    if clock is None:
        yield
        return
    loop = asyncio.get_running_loop()
    clock.pause(loop.time())
    try:
        yield
    finally:
        clock.resume(loop.time())
