"""Helpers shared by the graph runtime tests (imported by name: tests run in prepend mode): tools driven by asyncio events, and an event recorder."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from saber.events import Event, RagResult, emit
from saber.tools import Tool


class Gate:
    """A tool whose calls wait until the test opens them; records starts, ends and cancellations."""

    def __init__(self, name: str, result: Any = "ok") -> None:
        self.name = name
        self.result = result
        self.started: dict[str, asyncio.Event] = {}
        self.release: dict[str, asyncio.Event] = {}
        self.calls: list[str] = []
        self.cancelled: list[str] = []

    def started_event(self, key: str) -> asyncio.Event:
        return self.started.setdefault(key, asyncio.Event())

    def release_event(self, key: str) -> asyncio.Event:
        return self.release.setdefault(key, asyncio.Event())

    def tool(self) -> Tool:
        async def execute(args: dict[str, Any]) -> Any:
            key = str(args.get("key", ""))
            self.calls.append(key)
            self.started_event(key).set()
            try:
                await self.release_event(key).wait()
            except asyncio.CancelledError:
                self.cancelled.append(key)
                raise
            return f"{self.result}:{key}"

        schema = {"type": "object", "properties": {"key": {"type": "string"}}}
        return Tool.from_json_schema(self.name, "waits for the test", schema, execute)


def fn_tool(name: str, fn: Callable[[dict[str, Any]], Any], schema: dict[str, Any] | None = None) -> Tool:
    return Tool.from_json_schema(name, name, schema or {"type": "object", "properties": {}}, fn)


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self._waits: list[tuple[str, dict[str, Any], asyncio.Event]] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)
        for kind, match, seen in self._waits:
            if event.type == kind and all(getattr(event, k) == v for k, v in match.items()):
                seen.set()

    def seen(self, kind: str, **match: Any) -> asyncio.Event:
        """An event set once a ``kind`` event matching ``match`` is recorded (from now on)."""
        seen = asyncio.Event()
        self._waits.append((kind, match, seen))
        return seen

    def of(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.type == kind]

    def index(self, kind: str, **match: Any) -> int:
        for i, e in enumerate(self.events):
            if e.type == kind and all(getattr(e, k) == v for k, v in match.items()):
                return i
        raise AssertionError(f"no {kind} event matching {match}")


async def until(seen: asyncio.Event, task: asyncio.Task[Any]) -> None:
    """Wait for ``seen``, failing at once (not hanging) if ``task`` ends first: a run or race that
    broke never sets what the test waits for."""
    waiter = asyncio.ensure_future(seen.wait())
    await asyncio.wait({waiter, task}, return_when=asyncio.FIRST_COMPLETED)
    if not waiter.done():
        waiter.cancel()
        task.result()  # raises what ended it, if anything did
        raise AssertionError(f"{task.get_name()} ended before the awaited event")


def early_and_late_emitter(go: threading.Event, emitted: asyncio.Event) -> Callable[[dict[str, Any]], str]:
    """A sync tool (call it from a running loop) that emits an event, waits for ``go``, emits
    another, then sets ``emitted`` on the loop after anything ``emit`` handed to it; returns "late"."""
    loop = asyncio.get_running_loop()

    def tool(args: dict[str, Any]) -> str:
        emit(RagResult(query="early", hits=[]))
        go.wait(60)
        emit(RagResult(query="late", hits=[]))
        loop.call_soon_threadsafe(emitted.set)  # queued after anything emit() handed to the loop
        return "late"

    return tool
