"""Attempts and the events their tools emit.

Each attempt of a node is bound into the context its tool runs in (worker threads included), so
an event a tool emits through ``saber.events.emit`` can be traced back to its attempt, and
dropped once that attempt is over: a sync tool abandoned at its timeout may go on emitting long
after its node_done, or after ``run()`` returned, and a UI must never see that.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from saber.events import Event, EventHandler
from saber.tools.base import ThreadCall

log = logging.getLogger(__name__)


@dataclass(eq=False, kw_only=True, slots=True)
class Attempt:
    """One attempt of one node of one run."""

    run: object
    """Whose attempt it is (the runtime); a sub-agent may run a graph of its own inside one."""
    node_id: str
    number: int
    call: ThreadCall[Any] | None = field(default=None, repr=False)
    """Set when a sync tool runs in its own thread."""

    def abandoned_thread(self) -> bool:
        """The attempt was given up (timeout, cancel) while its thread is still running."""
        return self.call is not None and self.call.future.cancelled() and self.call.thread.is_alive()


_current: contextvars.ContextVar[tuple[Attempt, ...]] = contextvars.ContextVar("saber_graph_attempts", default=())
"""The attempts the current code runs inside, innermost last."""


class ToolEvents:
    """The handler a runtime installs with ``emitting_to``; safe to call from worker threads."""

    def __init__(self, run: object, on_event: EventHandler, *, running: Callable[[], bool],
                 spawn: Callable[[Coroutine[Any, Any, None], str], object]) -> None:
        self.run = run
        self.on_event = on_event
        self.running = running
        self.spawn = spawn
        self.loop = asyncio.get_running_loop()
        self.loop_thread = threading.get_ident()
        self.live: set[Attempt] = set()

    def enter(self, current: Attempt) -> contextvars.Token[tuple[Attempt, ...]]:
        """Events from ``current`` are delivered from now until ``leave``, dropped afterwards."""
        self.live.add(current)
        return _current.set((*_current.get(), current))

    def leave(self, current: Attempt, token: contextvars.Token[tuple[Attempt, ...]]) -> None:
        _current.reset(token)
        self.live.discard(current)

    def __call__(self, event: Event) -> Any:
        attempt = next((a for a in reversed(_current.get()) if a.run is self.run), None)
        if threading.get_ident() == self.loop_thread:
            return self.on_event(event) if self._accepts(attempt, event) else None
        try:
            self.loop.call_soon_threadsafe(self._deliver_from_thread, attempt, event)
        except RuntimeError:  # the loop is closed: the run is long over
            log.debug("dropped %s event from a tool thread: its event loop is closed", event.type)
        return None

    def _accepts(self, attempt: Attempt | None, event: Event) -> bool:
        if self.running() and (attempt is None or attempt in self.live):
            return True
        where = f"node {attempt.node_id} attempt {attempt.number}" if attempt is not None else "a tool"
        log.debug("dropped %s event from %s: it is over", event.type, where)
        return False

    def _deliver_from_thread(self, attempt: Attempt | None, event: Event) -> None:
        """On the loop: checked here, not in the thread, so it cannot race the attempt's end."""
        if not self._accepts(attempt, event):
            return
        try:
            result = self.on_event(event)
        except Exception:  # a broken listener must not break the run
            log.exception("event handler failed on %s", event.type)
            return
        if result is not None and inspect.isawaitable(result):
            self.spawn(_await_handler(result, event), "saber-emit")


async def _await_handler(pending: Any, event: Event) -> None:
    try:
        await pending
    except Exception:
        log.exception("event handler failed on %s", event.type)
