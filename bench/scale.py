"""The distributed mode at 1, 2 and 4 workers beside the in-process server, measured in one run.

I/O-bound react tasks: a plan of two steps whose tool sleeps 200 ms, a fake OpenAI-compatible
model answering after 50 ms. For each setup: tasks/s, p50/p99 end to end (request to ``done``),
and the time from the request to the first ``node_start`` — in the distributed mode that includes
the queue (insert, a worker's claim, Redis) — beside the same figure of one in-process
``saber serve`` with SQLite.

    python bench/scale.py [--tasks 32] [--concurrency 4]

PostgreSQL with pgvector: ``SABER_BENCH_PGVECTOR_URL`` (an admin URL) or a ``pgserver`` started
here; Redis: ``SABER_BENCH_REDIS_URL`` (default redis://127.0.0.1:6379/0).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from saber.testing import FakeOpenAIServer
from saber.testing.fake_openai import FakeReply

TOOLS = '''
import asyncio
from saber.tools import tool

@tool
async def io_step(task: str, step: str) -> str:
    """An I/O-bound step of a benchmark task (200 ms)."""
    await asyncio.sleep(0.2)
    return step
'''


def reply(body: dict[str, Any]) -> FakeReply:
    messages = body.get("messages") or []
    if "task planner" not in " ".join(str(m.get("content") or "") for m in messages):
        return FakeReply(text="finished", delay=0.05)
    task = str(messages[-1].get("content") or "").rsplit("job ", 1)[1].split()[0]
    plan = [{"id": f"n{i}", "tool": "io_step", "params": {"task": task, "step": f"n{i}"},
             "depends_on": [f"n{i - 1}"] if i > 1 else []} for i in (1, 2)]
    return FakeReply(text=json.dumps(plan), delay=0.05)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Procs:
    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root, self.env, self.procs, self.n = root, env, [], 0

    def start(self, *args: str) -> subprocess.Popen[bytes]:
        self.n += 1
        home = self.root / f"p{self.n}"
        home.mkdir(parents=True)
        log = open(home / "log.txt", "wb")  # noqa: SIM115 - the child holds it
        proc = subprocess.Popen([sys.executable, "-m", "saber.cli", *args], env=dict(self.env, SABER_HOME=str(home)),
                                stdout=log, stderr=subprocess.STDOUT)
        log.close()
        proc.home = home  # type: ignore[attr-defined]
        self.procs.append(proc)
        return proc

    def wait_log(self, proc: subprocess.Popen[bytes], text: str) -> None:
        log = proc.home / "log.txt"  # type: ignore[attr-defined]
        while text not in log.read_text(errors="replace"):
            if proc.poll() is not None:
                raise SystemExit(f"a process exited: {log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.2)

    def api(self) -> str:
        port = free_port()
        proc = self.start("serve", "--port", str(port))
        base = f"http://127.0.0.1:{port}"
        while True:
            if proc.poll() is not None:
                raise SystemExit("the API node exited")
            try:
                if httpx.get(base + "/readyz", timeout=2).status_code == 200:
                    return base
            except httpx.HTTPError:
                pass
            time.sleep(0.2)

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            p.wait(60)
        self.procs.clear()


def one_task(base: str, task_id: str, user: str) -> tuple[float, float]:
    """(seconds to the first node_start, seconds to done)."""
    body = {"message": f"run job {task_id} now", "mode": "react", "user_id": user, "task_id": task_id}
    t0 = time.perf_counter()
    first = 0.0
    with httpx.stream("POST", base + "/api/chat/stream", json=body, timeout=300) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if line == "event: node_start" and not first:
                first = time.perf_counter() - t0
            if line == "event: done":
                return first, time.perf_counter() - t0
    raise RuntimeError(f"{task_id}: the stream ended without done")


def measure(base: str, tasks: int, label: str) -> dict[str, Any]:
    one_task(base, f"warm-{uuid.uuid4().hex[:6]}", "warm")
    idle = statistics.median(one_task(base, f"idle{i}-{uuid.uuid4().hex[:6]}", "idle")[0] for i in range(5))
    t0 = time.perf_counter()
    with ThreadPoolExecutor(tasks) as pool:
        results = list(pool.map(lambda i: one_task(base, f"b{i}-{uuid.uuid4().hex[:8]}", f"user{i % 8}"),
                                range(tasks)))
    wall = time.perf_counter() - t0
    ends = sorted(r[1] for r in results)
    firsts = sorted(r[0] for r in results)
    return {"setup": label, "tasks_per_s": tasks / wall, "p50": statistics.median(ends),
            "p99": ends[min(len(ends) - 1, int(len(ends) * 0.99))], "to_first_node_p50": statistics.median(firsts),
            "idle_to_first_node": idle}


def pg_database(admin: str) -> str:
    import psycopg
    from sqlalchemy import make_url

    name = f"saber_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"'.encode())
    return make_url(admin).set(database=name).render_as_string(hide_password=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=4, help="slots per worker")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="saber-bench-scale-"))
    (root / "bench_scale_tools.py").write_text(TOOLS, encoding="utf-8")
    server: Any = None
    admin = os.environ.get("SABER_BENCH_PGVECTOR_URL")
    if not admin:
        import pgserver

        server = pgserver.get_server(root / "pg", cleanup_mode="stop")
        admin = server.get_uri()
    with FakeOpenAIServer([reply] * (args.tasks * 40)) as llm:
        base_env = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
        base_env.update({
            "SABER_LLM_BASE_URL": llm.base_url, "SABER_LLM_MODEL": "fake-model", "SABER_LLM_API_KEY": "k",
            "SABER_EMBEDDING_PROVIDER": "openai", "SABER_EMBEDDING_BASE_URL": llm.base_url,
            "SABER_EMBEDDING_API_KEY": "k", "SABER_EMBEDDING_DIM": "64", "SABER_SEARCH_BACKEND": "none",
            "SABER_TOOLS_MODULES": "bench_scale_tools", "SABER_SERVER_MAX_RUNNING_PER_USER": "64",
            "PYTHONPATH": os.pathsep.join([str(root), base_env.get("PYTHONPATH", "")]),
        })
        rows = []
        procs = Procs(root / "inproc", base_env)
        try:
            rows.append(measure(procs.api(), args.tasks, "in-process (SQLite)"))
        finally:
            procs.stop()
        for workers in (1, 2, 4):
            env = dict(base_env, SABER_DATABASE_URL=pg_database(admin),
                       SABER_REDIS_URL=os.environ.get("SABER_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0"),
                       SABER_CLUSTER_REDIS_PREFIX=f"saber-bench-{uuid.uuid4().hex[:8]}:")
            procs = Procs(root / f"w{workers}", env)
            try:
                base = procs.api()
                for _ in range(workers):
                    procs.wait_log(procs.start("worker", "--concurrency", str(args.concurrency)), "taking runs")
                rows.append(measure(base, args.tasks, f"{workers} worker(s) x {args.concurrency}"))
            finally:
                procs.stop()
    if server is not None:
        server.cleanup()
    inproc = rows[0]
    print(f"{args.tasks} react tasks (2 steps of 200 ms, model 50 ms per call), all sent at once")
    print(f"{'setup':<24} {'tasks/s':>8} {'p50 s':>7} {'p99 s':>7} {'1st node, burst p50 s':>22} "
          f"{'1st node, idle s':>17} {'tasks/s vs in-process':>22}")
    for r in rows:
        print(f"{r['setup']:<24} {r['tasks_per_s']:>8.2f} {r['p50']:>7.2f} {r['p99']:>7.2f} "
              f"{r['to_first_node_p50']:>22.3f} {r['idle_to_first_node']:>17.3f} "
              f"{r['tasks_per_s'] / inproc['tasks_per_s']:>21.2f}x")
    added = [r["idle_to_first_node"] - inproc["idle_to_first_node"] for r in rows[1:]]
    print("the queue's added latency, request to first node_start on an idle cluster (median of 5, vs in-process): "
          + ", ".join(f"{a * 1000:+.0f} ms" for a in added))


if __name__ == "__main__":
    main()
