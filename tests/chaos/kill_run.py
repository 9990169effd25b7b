"""A seeded random task graph, run or resumed from a SQLite checkpoint; the chaos kill test drives it.

    python kill_run.py run|resume <db path> <task id> <side-effect file> <seed>

Each node's tool appends ``start <key>`` to the side-effect file, then makes its side effect at
most once per idempotency key (``effect <key>``, skipped when the file already has it), then
sleeps a little so kills land between the effect and the checkpoint too.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import time
from typing import Any

from saber.graph import GraphConfig, GraphRuntime, Node, SQLiteCheckpointStore
from saber.graph.idempotency import idempotency_key
from saber.tools import Tool


def graph(seed: int) -> list[Node]:
    rng = random.Random(seed)
    nodes = []
    for i in range(1, 13):
        deps = sorted({f"n{rng.randrange(1, i)}" for _ in range(rng.randrange(0, 3))}) if i > 1 else []
        nodes.append(Node(id=f"n{i}", tool="work", params={"pause": rng.choice([0.0, 0.01, 0.05])}, depends_on=deps))
    return nodes


def work_tool(path: str) -> Tool:
    def append(line: str) -> None:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())

    def work(args: dict[str, Any]) -> str:  # sync: runs in a worker thread, which sees the key too
        key = idempotency_key()
        append(f"start {key}")
        with open(path, encoding="utf-8") as f:
            done = f"effect {key}\n" in f.read()
        if not done:
            append(f"effect {key}")
        time.sleep(float(args.get("pause") or 0))
        return f"ok {key}"

    return Tool.from_json_schema("work", "a side effect, once per key", {"type": "object", "properties": {
        "pause": {"type": "number"}}}, work)


async def main(mode: str, db: str, task_id: str, side: str, seed: int) -> None:
    store = SQLiteCheckpointStore(db)
    tools = {"work": work_tool(side)}
    if mode == "run":
        result = await GraphRuntime(graph(seed), tools, GraphConfig(max_parallel=3), checkpoint=store,
                                    task_id=task_id).run()
    else:
        result = await GraphRuntime.resume(task_id, store, tools)
    await store.close()
    print(result.status)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])))
