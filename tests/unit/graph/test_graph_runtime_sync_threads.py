"""Sync tools run in threads of their own: one stuck past its timeout is abandoned without
starving anything else, is not run a second time while it is still stuck, and whatever it emits
after its node ended is dropped."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from graph_testkit import Recorder, early_and_late_emitter, fn_tool

from saber.events import RagResult, emit
from saber.graph import GraphConfig, GraphRuntime, Node, NodeStatus

SCHEMA = {"type": "object", "properties": {"key": {"type": "string"}}}


class Stuck:
    """A sync tool stuck on a dead backend until the test releases it."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls: list[str] = []

    def __call__(self, args: dict[str, Any]) -> str:
        self.calls.append(str(args.get("key")))
        self.release.wait(60)
        return "late"


@pytest.fixture
def stuck() -> Iterator[Stuck]:
    tool = Stuck()
    yield tool
    tool.release.set()


async def test_stuck_sync_tools_are_not_retried_and_do_not_starve_later_sync_tools(stuck: Stuck) -> None:
    loop = asyncio.get_running_loop()
    small = ThreadPoolExecutor(max_workers=2)  # the process's shared pool, as small as it gets
    loop.set_default_executor(small)
    try:
        tools = {"hang": fn_tool("hang", stuck, SCHEMA), "fast": fn_tool("fast", lambda args: "fast-result")}
        config = GraphConfig(step_timeout=0.05, retry_delay=0.001)  # default max_attempts: 3
        rec = Recorder()
        first = await GraphRuntime([Node(id="h1", tool="hang", params={"key": "h1"}),
                                    Node(id="h2", tool="hang", params={"key": "h2"})], tools, config, on_event=rec).run()
        for node in first.nodes.values():
            assert node.status is NodeStatus.FAILED and node.attempts == 1
            assert node.error == ("timed out after 50 ms; the tool is still running in its thread, so it is not "
                                  "retried (a retry would run it twice at once)")
        assert sorted(stuck.calls) == ["h1", "h2"]  # a stuck call is never started a second time

        second = await GraphRuntime([Node(id="f1", tool="fast")], tools, config).run()
        assert second.status == "done" and second.nodes["f1"].result == "fast-result"
        assert second.nodes["f1"].attempts == 1
        assert await loop.run_in_executor(None, lambda: "pool free") == "pool free"
    finally:
        stuck.release.set()
        small.shutdown(wait=False)


async def test_a_sync_tool_that_times_out_but_already_returned_can_be_retried() -> None:
    calls: list[int] = []

    def flaky(args: dict[str, Any]) -> str:
        calls.append(1)
        if len(calls) == 1:
            raise TimeoutError("backend read timed out")
        return "second time lucky"

    result = await GraphRuntime([Node(id="n1", tool="flaky")], {"flaky": fn_tool("flaky", flaky)},
                                GraphConfig(retry_delay=0)).run()
    assert result.nodes["n1"].status is NodeStatus.DONE and len(calls) == 2


async def test_events_a_stuck_sync_tool_emits_after_its_node_ended_are_dropped() -> None:
    go = threading.Event()
    emitted = asyncio.Event()
    slow_search = early_and_late_emitter(go, emitted)

    rec = Recorder()
    result = await GraphRuntime([Node(id="n1", tool="s")], {"s": fn_tool("s", slow_search)},
                                GraphConfig(step_timeout=0.05, max_attempts=1), on_event=rec).run()
    assert result.status == "failed"
    go.set()
    await emitted.wait()
    for _ in range(3):  # let a delivery the loop was handed run to its end, had it been accepted
        await asyncio.sleep(0)
    assert [e.query for e in rec.of("rag_result")] == ["early"]  # type: ignore[attr-defined]
    assert rec.index("rag_result") < rec.index("node_done", id="n1")


def test_a_tool_thread_outliving_its_event_loop_does_not_crash(caplog: pytest.LogCaptureFixture) -> None:
    go = threading.Event()
    finished = threading.Event()
    errors: list[BaseException] = []

    def late(args: dict[str, Any]) -> str:
        go.wait(60)
        try:
            emit(RagResult(query="after the loop closed", hits=[]))
        except BaseException as exc:  # pragma: no cover - what this test guards against
            errors.append(exc)
        finished.set()
        return "late"

    seen: list[str] = []
    loop = asyncio.new_event_loop()
    try:
        result = loop.run_until_complete(GraphRuntime(
            [Node(id="n1", tool="late")], {"late": fn_tool("late", late)},
            GraphConfig(step_timeout=0.02, max_attempts=1), on_event=lambda e: seen.append(e.type)).run())
    finally:
        loop.close()
    assert result.nodes["n1"].status is NodeStatus.FAILED
    with caplog.at_level(logging.DEBUG, logger="saber.graph.attempts"):
        go.set()
        assert finished.wait(60)
    assert errors == [] and "rag_result" not in seen
    assert [r.getMessage() for r in caplog.records if r.name == "saber.graph.attempts"] == [
        "dropped rag_result event from a tool thread: its event loop is closed"]
