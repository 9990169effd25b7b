"""Graph runtime benchmark: makespan vs critical path, scheduler overhead, race latency.

    python bench/runtime.py

Everything is measured side by side in one run, on seeded random DAGs whose tools sleep for
heavy-tailed (lognormal) times. Compared: Saber's eager scheduler, a level-by-level scheduler
(what the original did), and LangGraph building the same DAG as a StateGraph with fan-in edges.
"""

from __future__ import annotations

import asyncio
import operator
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

from saber.graph import GraphConfig, GraphRuntime, Node, SQLiteCheckpointStore, TaskGraph
from saber.tools import Tool

SEED = 20240601


def random_dag(rng: random.Random, n: int, *, max_deps: int = 3, p_dep: float = 0.6) -> list[tuple[str, list[str]]]:
    """Nodes in topological order, each depending on up to ``max_deps`` earlier ones."""
    out: list[tuple[str, list[str]]] = []
    for i in range(n):
        deps: list[str] = []
        if i and rng.random() < p_dep:
            deps = sorted({f"n{rng.randrange(max(0, i - 12), i)}" for _ in range(rng.randint(1, max_deps))})
        out.append((f"n{i}", deps))
    return out


def latencies(rng: random.Random, dag: list[tuple[str, list[str]]]) -> dict[str, float]:
    """Heavy-tailed: lognormal with median 15 ms, sigma 1 (a few nodes take 100+ ms)."""
    return {name: min(rng.lognormvariate(0.0, 1.0) * 0.015, 0.4) for name, _ in dag}


def critical_path(dag: list[tuple[str, list[str]]], lat: dict[str, float]) -> float:
    finish: dict[str, float] = {}
    for name, deps in dag:
        finish[name] = max((finish[d] for d in deps), default=0.0) + lat[name]
    return max(finish.values())


def sleep_tool(lat: dict[str, float]) -> Tool:
    async def run(args: dict[str, Any]) -> str:
        await asyncio.sleep(lat[args["node"]])
        return args["node"]

    return Tool.from_json_schema("sleep", "sleeps", {"type": "object", "properties": {"node": {"type": "string"}}}, run)


def saber_graph(dag: list[tuple[str, list[str]]], tool: str = "sleep") -> TaskGraph:
    return TaskGraph([Node(id=name, tool=tool, params={"node": name}, depends_on=deps) for name, deps in dag])


async def run_saber(dag: list[tuple[str, list[str]]], lat: dict[str, float]) -> float:
    rt = GraphRuntime(saber_graph(dag), {"sleep": sleep_tool(lat)}, GraphConfig(max_parallel=len(dag)))
    t0 = time.perf_counter()
    result = await rt.run()
    assert result.ok
    return time.perf_counter() - t0


async def run_levels(dag: list[tuple[str, list[str]]], lat: dict[str, float]) -> float:
    """The baseline: start a level only when the whole previous level has finished."""
    levels = saber_graph(dag).levels()
    t0 = time.perf_counter()
    for level in levels:
        await asyncio.gather(*(asyncio.sleep(lat[name]) for name in level))
    return time.perf_counter() - t0


async def run_langgraph(dag: list[tuple[str, list[str]]], lat: dict[str, float]) -> float:
    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        done: Annotated[list[str], operator.add]

    def make(name: str) -> Any:
        async def node(state: State) -> dict[str, list[str]]:
            await asyncio.sleep(lat[name])
            return {"done": [name]}

        return node

    builder = StateGraph(State)
    has_dependents = {d for _, deps in dag for d in deps}
    for name, deps in dag:
        builder.add_node(name, make(name))
        if not deps:
            builder.add_edge(START, name)
        elif len(deps) == 1:
            builder.add_edge(deps[0], name)
        else:
            builder.add_edge(deps, name)  # fan-in: waits for every dependency
        if name not in has_dependents:
            builder.add_edge(name, END)
    graph = builder.compile()
    t0 = time.perf_counter()
    out = await graph.ainvoke({"done": []}, {"recursion_limit": 10_000, "max_concurrency": len(dag)})
    elapsed = time.perf_counter() - t0
    assert sorted(set(out["done"])) == sorted(name for name, _ in dag), "langgraph skipped nodes"
    return elapsed


async def makespans() -> None:
    rng = random.Random(SEED)
    ratios: dict[str, list[float]] = {"saber": [], "level-by-level": [], "langgraph": []}
    warm = random_dag(random.Random(0), 10)
    for runner in (run_saber, run_levels, run_langgraph):  # imports and first-call costs out of the way
        await runner(warm, dict.fromkeys((n for n, _ in warm), 0.001))
    for _ in range(8):
        dag = random_dag(rng, 40)
        lat = latencies(rng, dag)
        cp = critical_path(dag, lat)
        ratios["saber"].append(await run_saber(dag, lat) / cp)
        ratios["level-by-level"].append(await run_levels(dag, lat) / cp)
        ratios["langgraph"].append(await run_langgraph(dag, lat) / cp)
    print("makespan / critical path  (8 random DAGs x 40 nodes, lognormal latencies, median 15 ms)")
    for name, values in ratios.items():
        print(f"  {name:<16} mean {statistics.mean(values):.3f}   median {statistics.median(values):.3f}"
              f"   max {max(values):.3f}")


async def overhead() -> None:
    rng = random.Random(SEED + 1)
    dag = random_dag(rng, 2000)

    async def zero(args: dict[str, Any]) -> str:
        return "x"

    tools = {"zero": Tool.from_json_schema("zero", "returns", {"type": "object", "properties": {"node": {}}}, zero)}
    events: list[Any] = []

    async def once(store: SQLiteCheckpointStore | None) -> tuple[float, float]:
        """Microseconds per node: wall time, and CPU time of the process (worker threads included)."""
        events.clear()
        rt = GraphRuntime(saber_graph(dag, "zero"), tools, GraphConfig(max_parallel=8), on_event=events.append,
                          checkpoint=store)
        t0, cpu0 = time.perf_counter(), time.process_time()
        result = await rt.run()
        assert result.ok
        return (time.perf_counter() - t0) / len(dag) * 1e6, (time.process_time() - cpu0) / len(dag) * 1e6

    def best(runs: list[tuple[float, float]]) -> tuple[float, float]:
        return min(r[0] for r in runs), min(r[1] for r in runs)

    await once(None)  # warm-up
    plain, plain_cpu = best([await once(None) for _ in range(3)])
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteCheckpointStore(Path(tmp) / "bench.db")
        await once(store)
        durable, durable_cpu = best([await once(store) for _ in range(3)])
        await store.close()
    print(f"scheduler overhead per node  (2000-node DAG, zero-latency tools, events on, {len(events)} events/run)")
    print(f"  checkpoints off  {plain:7.1f} us/node   CPU {plain_cpu:6.1f} us/node")
    print(f"  SQLite on        {durable:7.1f} us/node   CPU {durable_cpu:6.1f} us/node   "
          f"(checkpointing adds {durable - plain:.1f} us/node, CPU {durable_cpu - plain_cpu:.1f})")


async def races() -> None:
    rng = random.Random(SEED + 2)
    latency: list[float] = []
    cancel: list[float] = []
    for _ in range(40):
        own = [rng.uniform(0.005, 0.03) for _ in range(3)]
        ended: dict[str, float] = {}
        cancelled: list[float] = []
        won: list[float] = []

        async def racer(args: dict[str, Any], own: list[float] = own, ended: dict[str, float] = ended,
                        cancelled: list[float] = cancelled) -> str:
            i = int(args["i"])
            try:
                await asyncio.sleep(own[i])
            except asyncio.CancelledError:
                cancelled.append(time.perf_counter())
                raise
            ended[f"r{i}"] = time.perf_counter()
            return f"r{i}"

        def on_event(event: Any, won: list[float] = won) -> None:
            if event.type == "race_won":
                won.append(time.perf_counter())

        tool = Tool.from_json_schema("racer", "races", {"type": "object", "properties": {"i": {}}}, racer)
        graph = TaskGraph([Node(id=f"r{i}", tool="racer", params={"i": i}, race_group="g") for i in range(3)])
        result = await GraphRuntime(graph, {"racer": tool}, GraphConfig(), on_event=on_event).run()
        winner = next(n.id for n in result.nodes.values() if n.status.value == "done")
        latency.append((won[0] - ended[winner]) * 1000)
        cancel.extend((t - ended[winner]) * 1000 for t in cancelled)

    def q(values: list[float], p: float) -> float:
        return sorted(values)[min(len(values) - 1, int(p * len(values)))]

    print("races  (40 races of 3 racers sleeping 5-30 ms)")
    print(f"  time to winner - fastest racer's own time    median {statistics.median(latency):.3f} ms   p95 {q(latency, 0.95):.3f} ms")
    print(f"  losers cancelled after the winner returned   median {statistics.median(cancel):.3f} ms   p95 {q(cancel, 0.95):.3f} ms")


async def main() -> None:
    t0 = time.perf_counter()
    await makespans()
    await overhead()
    await races()
    print(f"(benchmark took {time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    asyncio.run(main())
