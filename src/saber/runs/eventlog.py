"""A task's events, numbered from 1, that any number of readers replay and then follow live.

Every event is stored with its secrets redacted (``saber.redact``): the log is served to any
reader later, so a password typed in a query or returned by a tool is not in it.

This in-memory log is what one process serves; the distributed mode swaps in a log kept in a
Redis stream with the same three operations (append, close, follow).
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from saber.jsonsafe import to_jsonable
from saber.redact import redact_value, redacted_value


@dataclass(frozen=True, kw_only=True)
class LoggedEvent:
    seq: int
    """Its position in the task's log, from 1: the SSE ``id:``, and what ``Last-Event-ID`` names."""
    type: str
    data: dict[str, Any]
    """Already JSON-safe."""

    @functools.cached_property
    def json(self) -> str:
        """``data`` as JSON text, encoded once however many readers the event has (SSE streams,
        ``/api/chat`` answers, reconnections)."""
        return json.dumps(self.data, ensure_ascii=False, allow_nan=False)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.seq, "type": self.type, "data": self.data}


class EventLog:
    def __init__(self) -> None:
        self.events: list[LoggedEvent] = []
        self.closed = False
        self._changed = asyncio.Event()

    def append(self, type_: str, data: dict[str, Any]) -> LoggedEvent:
        """Log an event (redacted here, on the loop: for small data; see ``add``)."""
        return self._append(type_, redact_value(to_jsonable(data)))

    async def add(self, type_: str, data: dict[str, Any]) -> LoggedEvent:
        """``append``, redacting in a worker thread when the event holds much text."""
        return self._append(type_, await redacted_value(to_jsonable(data)))

    def _append(self, type_: str, data: dict[str, Any]) -> LoggedEvent:
        if self.closed:
            raise RuntimeError("the event log is closed")
        event = LoggedEvent(seq=len(self.events) + 1, type=type_, data=data)
        self.events.append(event)
        self._wake()
        return event

    def close(self) -> None:
        self.closed = True
        self._wake()

    def last(self, type_: str) -> LoggedEvent | None:
        return next((e for e in reversed(self.events) if e.type == type_), None)

    async def follow(self, after: int = 0) -> AsyncIterator[LoggedEvent]:
        """Every event with a sequence number above ``after``, then new ones as they come, until closed."""
        position = max(0, after)
        while True:
            while position < len(self.events):
                yield self.events[position]
                position += 1
            if self.closed:
                return
            changed = self._changed
            await changed.wait()

    def _wake(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()
