"""ToolRegistry under concurrent use from threads and asyncio tasks."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from saber.tools import Tool, ToolRegistry, UnknownToolError


def make(name: str) -> Tool:
    def execute(args: dict[str, Any]) -> str:
        return name

    return Tool(name=name, description=f"tool {name}", execute=execute)


def test_register_snapshot_filter_unregister() -> None:
    reg = ToolRegistry([make("a"), make("b")])
    snap = reg.snapshot()
    reg.register(make("c"))
    assert sorted(snap) == ["a", "b"], "a snapshot is a copy"
    assert sorted(reg.snapshot()) == ["a", "b", "c"]
    assert list(reg.filter(["c", "a"])) == ["c", "a"]
    assert reg.unregister("a") is not None and "a" not in reg
    assert reg.unregister("a") is None
    with pytest.raises(UnknownToolError, match="unknown tool: zz"):
        reg.filter(["b", "zz"])


def test_register_refuses_non_tools_and_duplicates_when_asked() -> None:
    reg = ToolRegistry([make("a")])
    with pytest.raises(TypeError, match="@tool"):
        reg.register(lambda: None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="already registered"):
        reg.register(make("a"), replace=False)


def test_threads_register_while_others_iterate_snapshots() -> None:
    reg = ToolRegistry([make(f"base{i}") for i in range(10)])
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def writer(k: int) -> None:
        start.wait()
        for i in range(200):
            reg.register(make(f"w{k}_{i}"))
            if i % 3 == 0:
                reg.unregister(f"w{k}_{i}")

    def reader() -> None:
        start.wait()
        try:
            for _ in range(200):
                for name, t in reg.snapshot().items():
                    assert t.name == name
        except BaseException as exc:  # pragma: no cover - a failure is what we look for
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)] + [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(reg) == 10 + 4 * (200 - 67)


async def test_long_task_holding_a_snapshot_does_not_block_registration() -> None:
    reg = ToolRegistry([make("a")])
    holding = asyncio.Event()
    release = asyncio.Event()

    async def long_task() -> list[str]:
        snap = reg.snapshot()
        holding.set()
        await release.wait()
        return list(snap)

    task = asyncio.create_task(long_task())
    await holding.wait()
    await asyncio.to_thread(reg.register, make("mcp_tool"))
    assert "mcp_tool" in reg
    release.set()
    assert await task == ["a"]
