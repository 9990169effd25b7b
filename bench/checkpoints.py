"""What SQLite checkpoints cost per node, measured side by side in one run: none, the pooled
store with ``synchronous=NORMAL``, and with ``FULL`` (the default: fsynced commits). Wall time
and CPU time (user + system of the whole process, worker threads included: less disturbed by
other work on a shared machine) per node.

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
from saber.graph import GraphConfig, GraphRuntime, Node, NodeStatus
from saber.graph.checkpoint import SQLiteCheckpointStore
from saber.graph.checkpoint.base import new_owner
from saber.tools import Tool

NODES = 2000
WRITES = 1000


async def _zero(args: dict[str, Any]) -> str:
    return "x"


async def run_once(dag: Any, store: SQLiteCheckpointStore | None) -> tuple[float, float]:
    """Microseconds per node: wall time, CPU time."""
    tools = {"zero": Tool.from_json_schema("zero", "returns", {"type": "object", "properties": {"node": {}}}, _zero)}
    rt = GraphRuntime(saber_graph(dag, "zero"), tools, GraphConfig(max_parallel=8), on_event=None, checkpoint=store)
    t0, cpu0 = time.perf_counter(), time.process_time()
    result = await rt.run()
    assert result.ok
    return (time.perf_counter() - t0) / len(dag) * 1e6, (time.process_time() - cpu0) / len(dag) * 1e6


async def main() -> None:
    dag = random_dag(random.Random(SEED + 1), NODES)
    await run_once(dag, None)  # warm-up
    rows: dict[str, tuple[float, float]] = {"off": _best([await run_once(dag, None) for _ in range(3)])}
    modes: tuple[Literal["NORMAL", "FULL"], ...] = ("NORMAL", "FULL")
    writes: dict[str, tuple[float, float]] = {}
    for sync in modes:
        with tempfile.TemporaryDirectory() as tmp:
            store = SQLiteCheckpointStore(Path(tmp) / "bench.db", synchronous=sync)
            await run_once(dag, store)
            rows[sync] = _best([await run_once(dag, store) for _ in range(3)])
            await single_writes(store)
            writes[sync] = _best([await single_writes(store) for _ in range(3)])
            await store.close()
    base, base_cpu = rows["off"]
    print(f"SQLite checkpoints, {NODES}-node DAG, zero-latency tools (best of 3)")
    for name, (per_node, cpu) in rows.items():
        print(f"  {name:<7} {per_node:7.1f} us/node  x{per_node / base:4.2f} of no checkpoints   "
              f"CPU {cpu:7.1f} us/node  x{cpu / base_cpu:4.2f}")
    print(f"One save_nodes of one node by its owner, {WRITES} in a row (best of 3)")
    for name, (per_write, cpu) in writes.items():
        print(f"  {name:<7} {per_write:7.1f} us/write   CPU {cpu:7.1f} us/write")


async def single_writes(store: SQLiteCheckpointStore) -> tuple[float, float]:
    """One ``save_nodes`` of one node by its owner (what the runtime does after a node alone
    finishes), repeated: microseconds per write, wall time and CPU time."""
    owner = new_owner()
    task = f"bench-writes-{owner}"
    nodes = [Node(id=f"n{i}", tool="zero", params={"node": i}) for i in range(10)]
    await store.save_graph(task, nodes, config={}, status="running", owner=owner)
    nodes[0].status, nodes[0].result = NodeStatus.DONE, "x"
    t0, cpu0 = time.perf_counter(), time.process_time()
    for _ in range(WRITES):
        await store.save_nodes(task, nodes[:1], owner=owner)
    return (time.perf_counter() - t0) / WRITES * 1e6, (time.process_time() - cpu0) / WRITES * 1e6


def _best(runs: list[tuple[float, float]]) -> tuple[float, float]:
    """The lowest wall time and the lowest CPU time of the runs (each on its own)."""
    return min(r[0] for r in runs), min(r[1] for r in runs)


if __name__ == "__main__":
    asyncio.run(main())
