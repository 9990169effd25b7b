"""Events: tag and data shapes, the emit() context, and the in-process bus."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from saber import events as ev


def test_tag_and_data() -> None:
    e = ev.NodeDone(id="n1", tool="get_time", status="done", duration_ms=1.5, attempts=1)
    assert e.type == "node_done"
    assert e.data == {"id": "n1", "tool": "get_time", "status": "done", "duration_ms": 1.5, "attempts": 1, "error": None}
    json.dumps(e.to_dict())


def test_step_kind_travels_as_type() -> None:
    e = ev.Step(kind="action", content="call get_time", tool="get_time", params={})
    assert e.type == "step"
    assert e.data["type"] == "action"


async def test_emit_reaches_the_current_handler_only() -> None:
    seen: list[str] = []
    ev.emit(ev.Token(content="nobody listens"))
    with ev.emitting_to(lambda e: seen.append(e.type)):
        ev.emit(ev.Token(content="a"))

        async def in_task() -> None:
            ev.emit(ev.Token(content="b"))

        await asyncio.create_task(in_task())
    ev.emit(ev.Token(content="after"))
    assert seen == ["token", "token"]


async def test_emit_with_async_handler() -> None:
    got = asyncio.Event()

    async def handler(e: ev.Event) -> None:
        got.set()

    with ev.emitting_to(handler):
        ev.emit(ev.Token(content="x"))
    await asyncio.wait_for(got.wait(), 5)


async def test_bus_isolates_failing_subscribers_and_drains() -> None:
    bus = ev.EventBus()
    received: list[tuple[str, dict[str, Any]]] = []

    def broken(topic: str, payload: dict[str, Any]) -> None:
        raise RuntimeError("subscriber bug")

    async def slow(topic: str, payload: dict[str, Any]) -> None:
        await asyncio.sleep(0)
        received.append((topic, payload))

    bus.subscribe("agent.chat", broken)
    unsubscribe = bus.subscribe("agent.chat", slow)
    bus.subscribe("*", lambda t, p: received.append(("*", p)))
    bus.publish("agent.chat", {"answer": "hi"})
    await bus.drain()
    assert ("agent.chat", {"answer": "hi"}) in received and ("*", {"answer": "hi"}) in received
    unsubscribe()
    bus.publish("agent.chat", {"answer": "again"})
    await bus.drain()
    assert ("agent.chat", {"answer": "again"}) not in received


async def test_plain_subscribers_run_off_the_loop_in_publish_order() -> None:
    import threading

    bus = ev.EventBus()
    seen: list[int] = []
    threads: set[str] = set()
    queue: asyncio.Queue[int] = asyncio.Queue()

    def record(topic: str, payload: dict[str, Any]) -> None:
        threads.add(threading.current_thread().name)
        seen.append(payload["n"])

    bus.subscribe("t", record)
    bus.subscribe("t", lambda topic, payload: queue.put(payload["n"]))  # returns an awaitable: awaited
    for n in range(6):
        bus.publish("t", {"n": n})
    await bus.drain()
    assert seen == list(range(6))
    assert threading.main_thread().name not in threads
    assert [queue.get_nowait() for _ in range(6)] == list(range(6))
