"""Issue 9, items 1-4: results JSON cannot encode, a scheduler bug, a failing checkpoint store, the
answer stage and the idempotency key. Each test fails on the code before the fix."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import stamina
from graph_testkit import Recorder, fn_tool

from saber.graph import GraphConfig, GraphRuntime, Node, NodeStatus, SQLiteCheckpointStore
from saber.graph.idempotency import idempotency_key
from saber.graph.persist import answered
from saber.graph.state import GraphState
from saber.tools import ToolError


def tuple_keys(args: dict[str, Any]) -> Any:
    return {("a", 1): "x", "ok": [1, 2]}


def circular(args: dict[str, Any]) -> Any:
    loop: dict[str, Any] = {"name": "loop"}
    loop["self"] = loop
    return loop


async def async_circular(args: dict[str, Any]) -> Any:
    return circular(args)


async def ok(args: dict[str, Any]) -> str:
    return "ok"


@pytest.mark.parametrize("fn", [tuple_keys, circular, async_circular])
async def test_a_result_json_cannot_encode_is_kept_as_its_safe_form(fn: Any, tmp_path: Path) -> None:
    store = SQLiteCheckpointStore(tmp_path / "cp.db")
    tools = {"odd": fn_tool("odd", fn), "t": fn_tool("t", ok)}
    nodes = [Node(id="n1", tool="odd"), Node(id="n2", tool="t"), Node(id="n3", tool="t", depends_on=["n1"])]
    rec = Recorder()
    result = await GraphRuntime(nodes, tools, GraphConfig(), rec, checkpoint=store, task_id="t1").run()
    assert result.status == "done", result.errors
    assert result.nodes["n1"].status is NodeStatus.DONE
    assert result.nodes["n3"].status is NodeStatus.DONE
    saved = await store.load("t1")
    assert saved is not None and saved.status == "done"
    assert all(n.status is NodeStatus.DONE for n in saved.nodes)
    value = saved.nodes[0].result
    assert value == {"('a', 1)": "x", "ok": [1, 2]} or value["self"] == "<circular>"
    await store.close()


async def test_a_huge_result_is_cut_with_a_note_naming_the_limit() -> None:
    def huge(args: dict[str, Any]) -> str:
        return "x" * 5000

    result = await GraphRuntime([Node(id="n1", tool="big")], {"big": fn_tool("big", huge)},
                                GraphConfig(max_result_chars=100)).run()
    text = result.nodes["n1"].result
    assert text.startswith("x" * 100) and "5,000 characters" in text and "graph.max_result_chars" in text


async def test_a_bug_applying_an_outcome_fails_only_that_node(monkeypatch: pytest.MonkeyPatch) -> None:
    original = GraphState.finish

    def broken(self: GraphState, outcome: Any, changed: Any, events: Any) -> Any:
        if outcome.node_id == "bad" and outcome.status is NodeStatus.DONE:
            raise RuntimeError("bug in finish")
        return original(self, outcome, changed, events)

    monkeypatch.setattr(GraphState, "finish", broken)
    tools = {"t": fn_tool("t", ok)}
    result = await GraphRuntime([Node(id="bad", tool="t"), Node(id="good", tool="t")], tools, GraphConfig()).run()
    assert result.nodes["good"].status is NodeStatus.DONE
    assert result.nodes["bad"].status is NodeStatus.FAILED
    assert "bug in finish" in (result.nodes["bad"].error or "")


async def test_a_scheduler_crash_leaves_no_worker_running(monkeypatch: pytest.MonkeyPatch) -> None:
    started = asyncio.Event()
    finished: list[str] = []

    async def slow(args: dict[str, Any]) -> str:
        started.set()
        await asyncio.sleep(3600)
        finished.append("slow")
        return "late"

    runtime = GraphRuntime([Node(id="a", tool="t"), Node(id="b", tool="slow")],
                           {"t": fn_tool("t", ok), "slow": fn_tool("slow", slow)}, GraphConfig(), Recorder())

    def crash(message: Any, changed: Any, events: Any) -> None:
        raise RuntimeError("scheduler bug")

    monkeypatch.setattr(runtime, "_apply_safely", crash)
    result = await runtime.run()
    assert result.stopped is not None and "scheduler bug" in result.stopped
    assert result.nodes["b"].status is NodeStatus.CANCELLED
    assert started.is_set() and not runtime._tasks, "no node worker outlives run()"
    assert [t for t in asyncio.all_tasks() if t.get_name().startswith("saber-node")] == []


class FailingStore(SQLiteCheckpointStore):
    """A store whose node writes fail after the first ``ok_writes`` (a database that went away),
    ``failures`` times (then it is back), or for good."""

    def __init__(self, path: Path, ok_writes: int, *, failures: int | None = None, outage_seconds: float = 0.3) -> None:
        super().__init__(path)
        self.ok_writes = ok_writes
        self.failures = failures
        self.outage_seconds = outage_seconds
        self.failed = 0

    async def save_nodes(self, task_id: str, nodes: Sequence[Node], *, replans: int | None = None,
                         owner: str | None = None) -> None:
        if self.ok_writes <= 0 and (self.failures is None or self.failed < self.failures):
            self.failed += 1
            raise OSError("disk I/O error")
        self.ok_writes -= 1
        await super().save_nodes(task_id, nodes, replans=replans, owner=owner)


def _recorded_chain() -> tuple[list[str], dict[str, Any], list[Node]]:
    """A chain n1 → n4 of one tool that records the key of each call it runs."""
    calls: list[str] = []

    async def step(args: dict[str, Any]) -> str:
        calls.append(str(args.get("key")))
        return "ok"

    tools = {"s": fn_tool("s", step, {"type": "object", "properties": {"key": {"type": "string"}}})}
    chain = [Node(id=f"n{i}", tool="s", params={"key": f"n{i}"}, depends_on=[f"n{i - 1}"] if i > 1 else [])
             for i in range(1, 5)]
    return calls, tools, chain


async def test_a_checkpoint_outage_pauses_the_run_and_it_goes_on_when_the_store_is_back(tmp_path: Path) -> None:
    calls, tools, chain = _recorded_chain()
    store = FailingStore(tmp_path / "cp.db", ok_writes=1, failures=3, outage_seconds=30)
    rec = Recorder()
    with stamina.set_testing(True, attempts=10):  # the waits between tries skipped, not the tries
        result = await GraphRuntime(chain, tools, GraphConfig(), rec, checkpoint=store, task_id="t1").run()
    assert store.failed == 3, "the write was tried again until the store was back"
    assert result.status == "done" and result.stopped is None
    assert calls == ["n1", "n2", "n3", "n4"], "no step ran twice, none was skipped"
    assert not rec.of("error"), "an outage that was waited out is no error"
    saved = await store.load("t1")
    assert saved is not None and saved.status == "done" and all(n.status is NodeStatus.DONE for n in saved.nodes)
    await store.close()


async def test_a_failed_checkpoint_write_stops_the_run_resumably(tmp_path: Path) -> None:
    calls, tools, chain = _recorded_chain()
    store = FailingStore(tmp_path / "cp.db", ok_writes=1)  # down for longer than the run waits
    rec = Recorder()
    with stamina.set_testing(True, attempts=3):  # the run tries 3 times (no wait between), not for 0.3 s
        result = await GraphRuntime(chain, tools, GraphConfig(), rec, checkpoint=store, task_id="t1").run()
    assert calls == ["n1", "n2"], "no node starts after a checkpoint write failed"
    assert result.status == "cancelled" and result.stopped == "a checkpoint write failed"
    assert any("checkpoint failed: disk I/O error" in e.data["message"] for e in rec.of("error"))
    saved = await store.load("t1")
    assert saved is not None and saved.status == "cancelled"  # resumable
    store.ok_writes = 100
    resumed = await GraphRuntime.resume("t1", store, tools)
    assert resumed.status == "done" and calls == ["n1", "n2", "n2", "n3", "n4"]
    await store.close()


async def test_answer_follows_keeps_the_task_answering_until_answered(tmp_path: Path) -> None:
    store = SQLiteCheckpointStore(tmp_path / "cp.db")
    result = await GraphRuntime([Node(id="n1", tool="t")], {"t": fn_tool("t", ok)}, GraphConfig(),
                                checkpoint=store, task_id="t1", answer_follows=True).run()
    assert result.status == "done"
    saved = await store.load("t1")
    assert saved is not None and saved.status == "answering"
    await answered(store, "t1", result.status)
    saved = await store.load("t1")
    assert saved is not None and saved.status == "done"
    await store.close()


async def test_every_attempt_and_a_resume_see_the_same_idempotency_key(tmp_path: Path) -> None:
    seen: list[str | None] = []

    def flaky(args: dict[str, Any]) -> str:  # sync: runs in a worker thread
        seen.append(idempotency_key())
        if len(seen) == 1:
            raise ToolError("transient", retryable=True)
        return "ok"

    async def async_tool(args: dict[str, Any]) -> str:
        seen.append(idempotency_key())
        return "ok"

    tools = {"flaky": fn_tool("flaky", flaky), "a": fn_tool("a", async_tool)}
    store = SQLiteCheckpointStore(tmp_path / "cp.db")
    nodes = [Node(id="n1", tool="flaky"), Node(id="n2", tool="a", depends_on=["n1"])]
    await GraphRuntime(nodes, tools, GraphConfig(retry_delay=0), checkpoint=store, task_id="task-9").run()
    assert seen == ["task-9:n1", "task-9:n1", "task-9:n2"]
    assert idempotency_key() is None
    await store.set_status("task-9", "cancelled")  # as if it had been cut off: resume runs nothing finished...
    saved = await store.load("task-9")
    assert saved is not None
    saved.nodes[1].status = NodeStatus.PENDING
    await store.save_nodes("task-9", [saved.nodes[1]])
    await GraphRuntime.resume("task-9", store, tools)
    assert seen[-1] == "task-9:n2", "a resume runs the node under the same key"
    await store.close()
