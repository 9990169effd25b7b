"""Events tools emit, traced to their attempt, where mutation testing (mutmut, see pyproject's
``[tool.mutmut]``) found it unchecked: an attempt that is over while the run goes on (a thread
abandoned at its timeout, a task an async tool left behind), and handlers that are async, return
a value or raise on an event from a tool thread. The run is kept going with an open feed, so no
test depends on how long anything takes."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import pytest
from graph_testkit import Recorder, early_and_late_emitter, fn_tool, until

from saber.events import Event, RagResult, emit
from saber.graph import GraphConfig, GraphRuntime, Node, NodeStatus

ATTEMPTS_LOG = "saber.graph.attempts"


def attempt_log(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == ATTEMPTS_LOG]


async def test_an_abandoned_tool_threads_events_are_dropped_while_the_run_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=ATTEMPTS_LOG)
    go = threading.Event()
    emitted = asyncio.Event()
    stuck = early_and_late_emitter(go, emitted)

    rec = Recorder()
    node_done = rec.seen("node_done", id="h")
    rt = GraphRuntime([Node(id="h", tool="s")], {"s": fn_tool("s", stuck)},
                      GraphConfig(step_timeout=0.02, max_attempts=1), on_event=rec)
    rt.open_feed()  # the run goes on after h: it ends only when the feed is closed
    run = asyncio.create_task(rt.run())
    await until(node_done, run)
    go.set()
    await until(emitted, run)
    for _ in range(3):  # let a delivery the loop was handed run to its end, had it been accepted
        await asyncio.sleep(0)
    assert not run.done()
    rt.close_feed()
    result = await run
    assert result.nodes["h"].status is NodeStatus.FAILED
    assert [e.query for e in rec.of("rag_result")] == ["early"]  # type: ignore[attr-defined]
    assert "dropped rag_result event from node h attempt 1: it is over" in attempt_log(caplog)


async def test_a_task_an_async_tool_left_behind_cannot_emit_once_its_attempt_is_over(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=ATTEMPTS_LOG)
    go = asyncio.Event()
    left_behind: list[asyncio.Task[None]] = []

    async def later() -> None:
        await go.wait()
        emit(RagResult(query="late", hits=[]))

    async def tool(args: dict[str, Any]) -> str:
        emit(RagResult(query="early", hits=[]))
        left_behind.append(asyncio.create_task(later()))  # inherits the attempt's context
        return "ok"

    rec = Recorder()
    node_done = rec.seen("node_done", id="n1")
    rt = GraphRuntime([Node(id="n1", tool="t")], {"t": fn_tool("t", tool)}, GraphConfig(), on_event=rec)
    rt.open_feed()
    run = asyncio.create_task(rt.run())
    await until(node_done, run)
    go.set()
    await left_behind[0]  # emit() neither raised nor delivered
    rt.close_feed()
    result = await run
    assert result.nodes["n1"].status is NodeStatus.DONE
    assert [e.query for e in rec.of("rag_result")] == ["early"]  # type: ignore[attr-defined]
    assert "dropped rag_result event from node n1 attempt 1: it is over" in attempt_log(caplog)


def from_thread(args: dict[str, Any]) -> str:
    emit(RagResult(query="from a thread", hits=[]))
    return "ok"


async def settle_spawned() -> None:
    for _ in range(5):  # the handler of an event from a thread runs in a task of its own
        await asyncio.sleep(0)


async def test_an_async_handler_is_awaited_for_an_event_from_a_tool_thread() -> None:
    seen: list[tuple[str, str]] = []

    async def handler(event: Event) -> None:
        await asyncio.sleep(0)
        task = asyncio.current_task()
        assert task is not None
        seen.append((event.type, task.get_name()))

    result = await GraphRuntime([Node(id="n1", tool="s")], {"s": fn_tool("s", from_thread)}, GraphConfig(),
                                on_event=handler).run()
    await settle_spawned()
    assert result.status == "done"
    assert [name for kind, name in seen if kind == "rag_result"] == ["saber-emit"]


async def test_a_handler_that_returns_a_value_is_not_taken_for_a_failure(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[str] = []

    def handler(event: Event) -> bool:
        seen.append(event.type)
        return True

    await GraphRuntime([Node(id="n1", tool="s")], {"s": fn_tool("s", from_thread)}, GraphConfig(), on_event=handler).run()
    await settle_spawned()
    assert "rag_result" in seen and attempt_log(caplog) == []


@pytest.mark.parametrize("is_async", [False, True])
async def test_a_handler_failing_on_an_event_from_a_tool_thread_is_logged_and_the_run_goes_on(
        is_async: bool, caplog: pytest.LogCaptureFixture) -> None:
    def check(event: Event) -> None:
        if event.type == "rag_result":
            raise RuntimeError("broken listener")

    async def async_handler(event: Event) -> None:
        check(event)

    result = await GraphRuntime([Node(id="n1", tool="s")], {"s": fn_tool("s", from_thread)}, GraphConfig(),
                                on_event=async_handler if is_async else check).run()
    await settle_spawned()
    assert result.status == "done" and result.nodes["n1"].result == "ok"
    assert attempt_log(caplog) == ["event handler failed on rag_result"]


async def test_an_event_emitted_outside_any_attempt_while_the_run_goes_on_is_delivered(
        caplog: pytest.LogCaptureFixture) -> None:
    seen: list[Event] = []

    def listener(event: Event) -> None:  # reacts to node_start, emitted before the attempt begins
        seen.append(event)
        if event.type == "node_start":
            emit(RagResult(query="from a listener", hits=[]))

    result = await GraphRuntime([Node(id="n1", tool="s")], {"s": fn_tool("s", lambda args: "ok")}, GraphConfig(),
                                on_event=listener).run()
    assert result.status == "done"
    assert [e.query for e in seen if isinstance(e, RagResult)] == ["from a listener"]
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_an_event_emitted_outside_any_attempt_after_the_run_is_dropped_quietly(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=ATTEMPTS_LOG)
    run_over = asyncio.Event()
    later: list[asyncio.Task[None]] = []
    seen: list[Event] = []

    async def after_the_run() -> None:
        await run_over.wait()
        emit(RagResult(query="too late", hits=[]))

    def listener(event: Event) -> None:  # its task runs in the run's context, outside any attempt
        seen.append(event)
        if event.type == "node_start":
            later.append(asyncio.create_task(after_the_run()))

    result = await GraphRuntime([Node(id="n1", tool="s")], {"s": fn_tool("s", lambda args: "ok")}, GraphConfig(),
                                on_event=listener).run()
    assert result.status == "done"
    run_over.set()
    await later[0]  # no error reaches the emitter
    assert [e for e in seen if isinstance(e, RagResult)] == []
    assert attempt_log(caplog) == ["dropped rag_result event from a tool: it is over"]
