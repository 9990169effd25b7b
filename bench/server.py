"""The HTTP server's overhead, beside a bare FastAPI endpoint measured in the same run.

    python bench/server.py [--hold 2.0] [--duration 5] [--concurrency 32]

1. SSE streams: N streams opened at once, each held open ``--hold`` seconds (the scripted model
   answers after that delay). Time to first event is measured from sending the request to
   receiving the first event. N doubles while the p99 stays under 100 ms; the largest such N is
   printed for Saber (``POST /api/chat/stream``) and for a bare sse-starlette endpoint that sends
   one event and then waits as long.
2. ``POST /api/chat`` requests/s (a react request: a scripted plan with one no-op tool, then a
   scripted answer; history written to SQLite) beside a bare FastAPI JSON endpoint that validates
   the same body and calls the same no-op tool, with ``--concurrency`` clients for ``--duration`` s.

Each server runs in its own process (``--serve``), the load comes from this one.
"""


import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel

PLAN = json.dumps([{"id": "n1", "tool": "noop", "params": {}}])


# -- the servers ---------------------------------------------------------------------------------

class Body(BaseModel):
    """The bare endpoint's body: the fields the benchmark sends."""

    message: str
    mode: str | None = None
    user_id: str | None = None


def serve_saber(port: int, home: Path, hold: float) -> None:
    import uvicorn

    from saber.agent import Agent
    from saber.agent.memory import MemoryService
    from saber.agent.memory.sqlite_store import SQLiteMemoryStore
    from saber.config import Settings
    from saber.llm.types import Message
    from saber.rag.embedder import HashingEmbedder
    from saber.rag.engine import RagEngine
    from saber.rag.store import SQLiteStore
    from saber.server import create_app
    from saber.testing import ScriptedModel
    from saber.tools import tool

    @tool
    def noop() -> str:
        """Do nothing."""
        return "ok"

    class Model(ScriptedModel):
        """Scripted replies without end: a plan for the planner, otherwise a short answer."""

        async def _next(self, messages: Sequence[Message], *args: Any, **kwargs: Any) -> Any:
            planning = "depends_on" in messages[0].content
            self.replies.append(PLAN if planning else "done.")
            self.calls.clear()
            return await super()._next(messages, *args, **kwargs)

    settings = Settings(home=home, search_backend="none", server_max_running_per_user=100_000,
                        server_max_body_bytes=1_000_000)
    embedder = HashingEmbedder()
    agent = Agent(settings, model=Model(delay=0.0), tools=[noop], builtin=False,
                  knowledge=RagEngine(SQLiteStore(str(settings.sqlite_path)), embedder),
                  memory=MemoryService(SQLiteMemoryStore(settings.sqlite_path), embedder))
    app = create_app(agent, settings)

    @app.middleware("http")
    async def hold_streams(request: Any, call_next: Any) -> Any:  # the scripted model waits only for streams
        agent.model.delay = hold if request.url.path.endswith("/stream") else 0.0  # type: ignore[attr-defined]
        return await call_next(request)

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error", backlog=4096)


def serve_bare(port: int, hold: float) -> None:
    import uvicorn
    from fastapi import FastAPI
    from sse_starlette import EventSourceResponse, ServerSentEvent

    app = FastAPI()

    def noop() -> str:
        return "ok"

    @app.post("/api/chat")
    async def chat(body: Body) -> dict[str, Any]:
        return {"answer": noop(), "mode": body.mode}

    @app.post("/api/chat/stream")
    async def stream(body: Body) -> EventSourceResponse:
        async def events() -> AsyncIterator[ServerSentEvent]:
            yield ServerSentEvent(data=json.dumps({"query": body.message}), event="start", id="1")
            await asyncio.sleep(hold)
            yield ServerSentEvent(data=json.dumps({"answer": "done."}), event="done", id="2")

        return EventSourceResponse(events())

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error", backlog=4096)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(kind: str, hold: float, home: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, __file__, "--serve", kind, "--port", str(port), "--home", str(home),
                             "--hold", str(hold)], env={k: v for k, v in os.environ.items() if not k.startswith("SABER_")})
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            httpx.get(url + "/openapi.json", timeout=1)
            return proc, url
        except httpx.TransportError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"the {kind} server did not start")


# -- the load ------------------------------------------------------------------------------------

async def first_event_times(url: str, n: int) -> list[float] | None:
    """Open ``n`` streams at once; seconds to each one's first event (None if any failed)."""
    limits = httpx.Limits(max_connections=n + 10, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        async def one(i: int) -> float | None:
            sent = time.perf_counter()
            try:
                async with client.stream("POST", "/api/chat/stream",
                                         json={"message": f"hello {i}", "mode": "chat", "user_id": f"u{i}"}) as r:
                    if r.status_code != 200:
                        return None
                    first = None
                    async for line in r.aiter_lines():
                        if first is None and line.startswith("data:"):
                            first = time.perf_counter() - sent
                    return first
            except httpx.TransportError:
                return None

        times = await asyncio.gather(*(one(i) for i in range(n)))
    return None if any(t is None for t in times) else [t for t in times if t is not None]


async def one_at_a_time(url: str, n: int = 30) -> float:
    """Median seconds to the first event of one stream at a time (the fixed cost per stream);
    each stream is closed at its first event."""
    times = []
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        for i in range(n):
            sent = time.perf_counter()
            async with client.stream("POST", "/api/chat/stream", json={"message": f"one {i}", "mode": "chat"}) as r:
                async for line in r.aiter_lines():
                    if line.startswith("data:"):
                        times.append(time.perf_counter() - sent)
                        break
    return statistics.median(times[5:])


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[98] if len(values) > 1 else values[0]


async def max_streams(url: str, limit: int) -> tuple[int, float]:
    """The largest N (doubling from 25) whose p99 time to first event is under 100 ms."""
    best, best_p99, n = 0, float("nan"), 10
    await first_event_times(url, 10)  # warm-up: first connections, first requests of each route
    while n <= limit:
        times = await first_event_times(url, n)
        print(f"  {n:>5} streams: " + ("a stream failed" if times is None else f"p99 {p99(times) * 1000:.1f} ms"),
              file=sys.stderr)
        if times is None or p99(times) >= 0.1:
            break
        best, best_p99 = n, p99(times)
        n *= 2
    return best, best_p99


async def requests_per_second(url: str, concurrency: int, duration: float) -> float:
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        done = 0
        end = time.perf_counter() + duration

        async def worker(w: int) -> None:
            nonlocal done
            i = 0
            while time.perf_counter() < end:
                r = await client.post("/api/chat", json={"message": f"run the no-op {w}-{i}", "mode": "react",
                                                         "user_id": f"w{w}"})
                if r.status_code != 200:
                    raise SystemExit(f"/api/chat answered {r.status_code}: {r.text[:300]}")
                done += 1
                i += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker(w) for w in range(concurrency)))
        return done / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--serve", choices=["saber", "bare"])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--home", type=Path)
    parser.add_argument("--hold", type=float, default=2.0)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--max-streams", type=int, default=3200)
    args = parser.parse_args()
    if args.serve == "saber":
        serve_saber(args.port, args.home, args.hold)
        return
    if args.serve == "bare":
        serve_bare(args.port, args.hold)
        return

    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("bare", "saber"):
            proc, url = start(kind, args.hold, Path(tmp) / kind)
            print(kind, file=sys.stderr)
            try:
                streams, streams_p99 = asyncio.run(max_streams(url, args.max_streams))
                single = asyncio.run(one_at_a_time(url))
                rps = asyncio.run(requests_per_second(url, args.concurrency, args.duration))
            finally:
                proc.terminate()
                proc.wait(30)
            results[kind] = {"streams": streams, "p99_ms": streams_p99 * 1000, "rps": rps, "single_ms": single * 1000}
    bare, saber = results["bare"], results["saber"]
    print(f"{'':34} {'Saber':>10} {'bare FastAPI':>13} {'ratio':>7}")
    print(f"{'SSE streams, p99 first event<100ms':34} {saber['streams']:>10.0f} {bare['streams']:>13.0f} "
          f"{saber['streams'] / max(bare['streams'], 1):>7.2f}")
    print(f"{'  p99 time to first event (ms)':34} {saber['p99_ms']:>10.1f} {bare['p99_ms']:>13.1f}")
    print(f"{'one stream: median first event (ms)':34} {saber['single_ms']:>10.1f} {bare['single_ms']:>13.1f} "
          f"{saber['single_ms'] / bare['single_ms']:>7.2f}")
    print(f"{'/api/chat requests/s (no-op tool)':34} {saber['rps']:>10.0f} {bare['rps']:>13.0f} "
          f"{saber['rps'] / bare['rps']:>7.2f}")


if __name__ == "__main__":
    main()
