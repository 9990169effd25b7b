"""Checkpoint stores (SQLite and PostgreSQL, same suite) and resuming a task after kill -9."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from graph_stores import pg_database

from saber.graph import (
    CheckpointStore,
    GraphConfig,
    GraphRuntime,
    Node,
    NodeStatus,
    PostgresCheckpointStore,
    SQLiteCheckpointStore,
    TaskGraph,
)
from saber.tools import Tool

HERE = Path(__file__).parent


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def target(store_kind: str, tmp_path: Path) -> Iterator[str]:
    if store_kind == "sqlite":
        yield str(tmp_path / "saber.db")
    else:
        yield from pg_database()


@pytest.fixture
async def store(store_kind: str, target: str) -> AsyncIterator[CheckpointStore]:
    s: CheckpointStore = SQLiteCheckpointStore(target) if store_kind == "sqlite" else PostgresCheckpointStore(target)
    async with s:
        yield s


def tool(name: str, fn: Any) -> Tool:
    return Tool.from_json_schema(name, name, {"type": "object", "properties": {"k": {}}}, fn)


async def test_state_is_saved_and_loaded(store: CheckpointStore) -> None:
    nodes = [Node(id="a", tool="t", params={"k": "大"}), Node(id="b", type="sub_agent", agent="w", goal="g",
                                                               depends_on=["a"], race_group="r")]
    await store.save_graph("t1", nodes, config=GraphConfig(max_parallel=3).to_dict(), status="running", meta={"u": 1})
    nodes[0].status, nodes[0].result, nodes[0].attempts = NodeStatus.DONE, {"x": [1, "二"]}, 2
    await store.save_nodes("t1", [nodes[0]], replans=1)
    await store.set_status("t1", "failed")
    saved = await store.load("t1")
    assert saved is not None and saved.status == "failed" and saved.replans == 1 and saved.meta == {"u": 1}
    assert GraphConfig.from_dict(saved.config).max_parallel == 3
    assert [n.to_dict() for n in saved.nodes] == [n.to_dict() for n in nodes]
    assert await store.list_tasks(status="failed") == ["t1"] and await store.list_tasks(status="running") == []
    await store.delete("t1")
    assert await store.load("t1") is None


async def test_a_finished_node_is_durable_before_its_dependents_start(store: CheckpointStore) -> None:
    seen: list[str] = []

    async def check(args: dict[str, Any]) -> str:
        saved = await store.load("t2")
        assert saved is not None
        seen.append(next(n for n in saved.nodes if n.id == "a").status.value)
        return "checked"

    graph = TaskGraph([Node(id="a", tool="first"), Node(id="b", tool="check", depends_on=["a"])])
    tools = {"first": tool("first", lambda a: "one"), "check": tool("check", check)}
    result = await GraphRuntime(graph, tools, GraphConfig(), checkpoint=store, task_id="t2").run()
    assert result.ok and seen == ["done"]
    saved = await store.load("t2")
    assert saved is not None and saved.status == "done"
    assert {n.id: n.result for n in saved.nodes} == {"a": "one", "b": "checked"}


async def test_resume_after_a_cancel_runs_only_what_did_not_finish(store: CheckpointStore) -> None:
    calls: Counter[str] = Counter()
    started = asyncio.Event()
    block = True

    async def work(args: dict[str, Any]) -> str:
        calls[args["k"]] += 1
        if args["k"] == "slow" and block:
            started.set()
            await asyncio.Event().wait()
        return f"r-{args['k']}"

    def graph() -> TaskGraph:
        return TaskGraph([
            Node(id="a", tool="w", params={"k": "a"}),
            Node(id="slow", tool="w", params={"k": "slow"}, depends_on=["a", "l1", "l2"]),
            Node(id="c", tool="w", params={"k": "c"}, depends_on=["slow"]),
            Node(id="l1", tool="w", params={"k": "l1"}, race_group="g"),
            Node(id="l2", tool="w", params={"k": "l2"}, race_group="g"),
        ])

    rt = GraphRuntime(graph(), {"w": tool("w", work)}, GraphConfig(), checkpoint=store, task_id="t3")
    run = asyncio.create_task(rt.run())
    await started.wait()
    rt.cancel()
    first = await run
    assert first.status == "cancelled" and sorted(first.unfinished) == ["c", "slow"]
    saved = await store.load("t3")
    assert saved is not None and saved.status == "cancelled"
    block = False
    result = await GraphRuntime.resume("t3", store, {"w": tool("w", work)})
    assert result.ok and result.nodes["c"].result == "r-c"
    assert calls["a"] == 1 and calls["slow"] == 2 and calls["c"] == 1
    assert calls["l1"] + calls["l2"] == 2  # the race ran once, in the first run
    winner = result.nodes["l1"] if result.nodes["l1"].status is NodeStatus.DONE else result.nodes["l2"]
    assert winner.result in ("r-l1", "r-l2")


async def test_a_cancel_that_lands_while_the_run_winds_up_still_records_cancelled(store: CheckpointStore) -> None:
    """cancel(), then the caller's task is cancelled while the cancelled nodes are being saved:
    the task must not stay "running" (seen in the chaos suite: a run nobody would ever resume)."""
    started, saving, release = asyncio.Event(), asyncio.Event(), asyncio.Event()
    save_nodes = store.save_nodes

    async def slow_save_nodes(*args: Any, **kwargs: Any) -> Any:
        if started.is_set():
            saving.set()
            await release.wait()
        return await save_nodes(*args, **kwargs)

    async def hang(args: dict[str, Any]) -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    store.save_nodes = slow_save_nodes  # type: ignore[method-assign]
    rt = GraphRuntime(TaskGraph([Node(id="h", tool="w", params={"k": 1})]), {"w": tool("w", hang)}, GraphConfig(),
                      checkpoint=store, task_id="t-wind-up")
    run = asyncio.create_task(rt.run())
    await started.wait()
    rt.cancel()
    await saving.wait()
    run.cancel()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await run
    saved = await store.load("t-wind-up")
    assert saved is not None and saved.status == "cancelled"
    assert [n.status for n in saved.nodes] == [NodeStatus.CANCELLED]


async def test_resume_of_an_unknown_task_is_a_clear_error(store: CheckpointStore) -> None:
    with pytest.raises(LookupError, match="no checkpoint for task 'nope'"):
        await GraphRuntime.resume("nope", store, {})


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


@pytest.mark.slow
def test_kill_9_mid_graph_then_resume_runs_every_node_exactly_once(store_kind: str, target: str, tmp_path: Path) -> None:
    side = tmp_path / "side-effects.txt"
    script = str(HERE / "killable_run.py")
    log = tmp_path / "run.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, script, "run", store_kind, target, "task-k9", str(side), "60"],
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        # n3 starts only once n1 and n2 are durable; n5 once n1 is. Both then sleep for a minute.
        while not {"start n3", "start n5"} <= set(_lines(side)):
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, f"no progress: {_lines(side)}"
            time.sleep(0.01)  # polling another process's file: there is no event to wait on
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    before = Counter(_lines(side))
    assert before["done n1"] == before["done n2"] == 1 and before["done n3"] == before["done n5"] == 0

    resumed = subprocess.run([sys.executable, script, "resume", store_kind, target, "task-k9", str(side), "0.01"],
                             capture_output=True, text=True, timeout=90)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.split()[0] == "done"
    after = Counter(_lines(side))
    nodes = ["n1", "n2", "n3", "n4", "n5", "n6"]
    assert {n: after[f"done {n}"] for n in nodes} == dict.fromkeys(nodes, 1)  # each ran to completion once
    assert {n: after[f"start {n}"] for n in nodes} == {"n1": 1, "n2": 1, "n3": 2, "n4": 1, "n5": 2, "n6": 1}
