"""Runs (or resumes) a checkpointed task graph; the kill -9 test drives it as a subprocess.

    python killable_run.py run|resume <sqlite|postgres> <path-or-dsn> <task_id> <side-effect file> <slow seconds>

Every tool execution appends ``start <node>`` then, after its sleep, ``done <node>`` to the
side-effect file (flushed and fsynced, so the parent sees exactly what happened before a kill).
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from saber.graph import (
    GraphConfig,
    GraphRuntime,
    Node,
    PostgresCheckpointStore,
    SQLiteCheckpointStore,
    TaskGraph,
)
from saber.graph.checkpoint import CheckpointStore
from saber.tools import Tool

SLOW = {"n3", "n5"}


def graph() -> TaskGraph:
    return TaskGraph([
        Node(id="n1", tool="work", params={"node": "n1"}),
        Node(id="n2", tool="work", params={"node": "n2"}),
        Node(id="n3", tool="work", params={"node": "n3"}, depends_on=["n1", "n2"]),
        Node(id="n4", tool="work", params={"node": "n4", "input": "$n3"}, depends_on=["n3"]),
        Node(id="n5", tool="work", params={"node": "n5"}, depends_on=["n1"]),
        Node(id="n6", tool="work", params={"node": "n6"}, depends_on=["n4", "n5"]),
    ])


def work_tool(side_effects: str, slow_seconds: float) -> Tool:
    def append(line: str) -> None:
        with open(side_effects, "a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())

    async def work(args: dict[str, Any]) -> str:
        node = args["node"]
        append(f"start {node}")
        await asyncio.sleep(slow_seconds if node in SLOW else 0.001)
        append(f"done {node}")
        return f"result of {node}" + (f" after {args['input']}" if "input" in args else "")

    schema = {"type": "object", "properties": {"node": {"type": "string"}, "input": {"type": "string"}}}
    return Tool.from_json_schema("work", "appends to the side-effect file", schema, work)


async def main(mode: str, kind: str, target: str, task_id: str, side_effects: str, slow: float) -> None:
    store: CheckpointStore = SQLiteCheckpointStore(target) if kind == "sqlite" else PostgresCheckpointStore(target)
    tools = {"work": work_tool(side_effects, slow)}
    async with store:
        if mode == "run":
            result = await GraphRuntime(graph(), tools, GraphConfig(step_timeout=120), checkpoint=store,
                                        task_id=task_id).run()
        else:
            result = await GraphRuntime.resume(task_id, store, tools)
    print(result.status, " ".join(f"{n.id}={n.status.value}" for n in result.nodes.values()))


if __name__ == "__main__":
    mode, kind, target, task_id, side_effects, slow = sys.argv[1:7]
    asyncio.run(main(mode, kind, target, task_id, side_effects, float(slow)))
