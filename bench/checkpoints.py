"""What SQLite checkpoints cost per node, measured side by side in one run: none, the pooled
store with ``synchronous=NORMAL``, and with ``FULL`` (the default: fsynced commits).

    python bench/checkpoints.py
"""

from __future__ import annotations

import asyncio
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

sys.path.insert(0, str(Path(__file__).parent))

from runtime import SEED, random_dag, saber_graph
from saber.graph import GraphConfig, GraphRuntime
from saber.graph.checkpoint import SQLiteCheckpointStore
from saber.tools import Tool

NODES = 2000


async def _zero(args: dict[str, Any]) -> str:
    return "x"


async def run_once(dag: Any, store: SQLiteCheckpointStore | None) -> float:
    """Microseconds per node."""
    tools = {"zero": Tool.from_json_schema("zero", "returns", {"type": "object", "properties": {"node": {}}}, _zero)}
    rt = GraphRuntime(saber_graph(dag, "zero"), tools, GraphConfig(max_parallel=8), on_event=None, checkpoint=store)
    t0 = time.perf_counter()
    result = await rt.run()
    assert result.ok
    return (time.perf_counter() - t0) / len(dag) * 1e6


async def main() -> None:
    dag = random_dag(random.Random(SEED + 1), NODES)
    await run_once(dag, None)  # warm-up
    rows: dict[str, float] = {"off": min([await run_once(dag, None) for _ in range(3)])}
    modes: tuple[Literal["NORMAL", "FULL"], ...] = ("NORMAL", "FULL")
    for sync in modes:
        with tempfile.TemporaryDirectory() as tmp:
            store = SQLiteCheckpointStore(Path(tmp) / "bench.db", synchronous=sync)
            await run_once(dag, store)
            rows[sync] = min([await run_once(dag, store) for _ in range(3)])
            await store.close()
    base = rows["off"]
    print(f"SQLite checkpoints, {NODES}-node DAG, zero-latency tools (best of 3)")
    for name, per_node in rows.items():
        print(f"  {name:<7} {per_node:7.1f} us/node  x{per_node / base:4.2f} of no checkpoints")


if __name__ == "__main__":
    asyncio.run(main())
