"""``saber serve`` beside a bare FastAPI + sse-starlette app doing the same HTTP work, in one run.

    python bench/server.py [--rounds 3] [--duration 8] [--clients 32] [--burst 500] [--before REV]
    python bench/server.py --profile saber.raw [--profile-side bare|before] [--gil] [--duration 20]

(``--profile``: py-spy samples one server under the chat load and prints the inclusive share of
its samples per function. ``bench/server_soak.py`` is the load and soak run.)

Both servers answer ``POST /api/chat`` (to the end, JSON) and ``POST /api/chat/stream`` (SSE) for
257 users, each with its own API key (``Authorization: Bearer``, checked against the 257 stored
SHA-256 hashes in constant time), with the same JSON body, one streamed call per request to the
same OpenAI-compatible fake model (``saber.testing.FakeOpenAIServer``, in a process of its own)
through the same client (``openai.AsyncOpenAI``), the same number and size of events (the bare
app replays the non-token events of a Saber run, token events come from the model's stream), the
same uvicorn settings (both are served by ``saber.cli.serve.run``), one worker process each.
Saber is ``python -m saber serve`` itself. The load client runs in a process of its own (a small
HTTP/1.1 client on asyncio streams, so that it costs less CPU than either server).

Each round measures both servers, alternating which goes first:

* chat req/s: ``--clients`` clients, each on its own keep-alive connection and key, post
  ``/api/chat`` for ``--duration`` seconds;
* streams/s: the same with ``/api/chat/stream``, each stream read to its end;
* first event at ``--burst`` streams: that many streams opened at once (one connection each);
  p50 and p99 of the time from connecting to the first ``data:`` line;
* CPU per run: the server process's user + system CPU (``/proc/<pid>/stat``) during the chat
  phase, divided by the runs it completed.

The table gives the median over rounds of each side, and the median of the per-round ratios.
``--before REV`` adds a third side: ``saber serve`` from the source of an earlier revision
(``git archive``, as ``bench/source_trees.py`` does), measured in the same rounds, so a change is
measured against what it changed under the same load.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field
from starlette.requests import Request

USERS = 257
ANSWER = "Hello! This is the fake model answering your question in a few short words, as a small model would."
TICKS = os.sysconf("SC_CLK_TCK")


def key_of(i: int) -> str:
    return f"sk-bench-{i:04d}-" + hashlib.sha256(str(i).encode()).hexdigest()[:24]


def write_keys(path: Path) -> None:
    lines = [f"user{i} sha256:{hashlib.sha256(key_of(i).encode()).hexdigest()}" for i in range(USERS)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


# -- the fake model --------------------------------------------------------------------------------

def serve_fake(port_file: Path) -> None:
    """The fake OpenAI server, answering every chat request with ``ANSWER`` and keeping no record."""
    import threading
    from http.server import ThreadingHTTPServer

    from saber.testing import FakeOpenAIServer, FakeReply
    from saber.testing.fake_openai import _Handler

    reply = FakeReply(text=ANSWER)
    released = threading.Event()
    stats = {"requests": 0, "messages": 0, "bytes": 0}
    """Read with ``GET /v1/stats``: the two servers must make the same upstream calls."""

    class Endless(FakeOpenAIServer):
        def _next_reply(self, body: dict[str, Any], number: int) -> FakeReply | None:
            stats["requests"] += 1
            stats["messages"] += len(body["messages"])
            stats["bytes"] += len(json.dumps(body["messages"]))
            asked = str(body["messages"][-1].get("content") or "")
            if asked.startswith("hold "):  # bench/server_soak.py: streams held open this many seconds
                return FakeReply(text=ANSWER, delay=float(asked.split()[1]))
            return reply

        def _record(self, handler: _Handler, body: Any) -> int:
            return 0

        def handle(self, handler: _Handler) -> None:
            if handler.path == "/v1/release":  # bench/server_soak.py: the held streams may answer now
                released.set()
                return self._send_json(handler, 200, {"released": True})
            return super().handle(handler)

        def _wait(self, handler: _Handler, seconds: float) -> bool:
            if seconds > 0:
                released.wait(seconds)
            return True

    ThreadingHTTPServer.request_queue_size = 4096  # 500 streams connect to it at once (the default backlog is 5)
    server = Endless(routes={"/v1/stats": stats}).start()
    port_file.write_text(str(server.port))
    threading.Event().wait()


# -- the bare app ----------------------------------------------------------------------------------

class ChatBody(BaseModel):
    """The bare app's body: the fields of Saber's ``ChatRequest``."""

    message: str = Field(min_length=1, max_length=32_000)
    mode: str | None = None
    user_id: str | None = None
    task_id: str | None = None
    selected_tools: list[str] | None = None
    use_rag: bool | None = None
    detach: bool = False


class KeyCheck:
    """Saber's key check, done the same way: hash the presented key, compare with every stored hash."""

    def __init__(self, keys_file: Path) -> None:
        self.hashed: dict[str, str] = {}
        for line in keys_file.read_text(encoding="utf-8").splitlines():
            user, digest = line.split()
            self.hashed[digest] = user

    def user_for(self, authorization: str) -> str | None:
        presented = "sha256:" + hashlib.sha256(authorization.removeprefix("Bearer ").encode()).hexdigest()
        found = None
        for stored, user in self.hashed.items():
            if hmac.compare_digest(stored, presented):
                found = user
        return found


class BareRun:
    """One request's events: the template's events before the answer, a token per streamed piece
    of the model's answer, then ``done``."""

    def __init__(self, template: list[dict[str, Any]], upstream: Any) -> None:
        from saber.agent.prompts import CHAT

        self.system = CHAT
        self.before = [e for e in template if e["type"] not in ("token", "done")]
        self.done = next(e["data"] for e in template if e["type"] == "done")
        self.upstream = upstream
        self.history: dict[str, deque[dict[str, str]]] = {}
        """Each user's last 20 messages (Saber's ``history_turns``), sent before the new one as Saber does."""

    async def events(self, body: ChatBody, user: str) -> AsyncIterator[tuple[int, str, dict[str, Any]]]:
        task_id = uuid.uuid4().hex
        history = self.history.setdefault(user, deque(maxlen=20))
        before = list(history)
        history.append({"role": "user", "content": body.message})
        n = 0
        for event in self.before:
            data = {**event["data"], **({"task_id": task_id} if "task_id" in event["data"] else {})}
            n += 1
            yield n, event["type"], ({**data, "query": body.message, "user_id": user} if event["type"] == "start" else data)
        stream = await self.upstream.chat.completions.create(
            model="fake-model", stream=True, messages=[{"role": "system", "content": self.system}, *before,
                                                       {"role": "user", "content": body.message}])
        answer = ""
        async for chunk in stream:
            piece = chunk.choices[0].delta.content if chunk.choices else None
            if piece:
                answer += piece
                n += 1
                yield n, "token", {"content": piece}
        history.append({"role": "assistant", "content": answer})
        yield n + 1, "done", {**self.done, "answer": answer, "task_id": task_id}


def bare_app(keys: KeyCheck, runs: BareRun) -> Any:
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse
    from sse_starlette import EventSourceResponse, ServerSentEvent

    app = FastAPI()

    class KeyGate:
        """Pure ASGI, as Saber's (``BaseHTTPMiddleware`` would cost the bare app more than Saber)."""

        def __init__(self, app: Any) -> None:
            self.app = app

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http" and scope["path"] != "/healthz":
                given = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
                user = keys.user_for(given)
                if user is None:
                    await JSONResponse({"error": {"code": "unauthorized"}}, status_code=401)(scope, receive, send)
                    return
                scope.setdefault("state", {})["user_id"] = user
            await self.app(scope, receive, send)

    app.add_middleware(KeyGate)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/api/chat")
    async def chat(body: ChatBody, request: Request) -> dict[str, Any]:
        logged = [{"id": n, "type": t, "data": d} async for n, t, d in runs.events(body, request.state.user_id)]
        done: dict[str, Any] = logged[-1]["data"]  # type: ignore[assignment]
        return {"answer": done["answer"], "mode": done["mode"], "task_id": done["task_id"], "usage": done.get("usage") or {},
                "model": done.get("model"), "interrupted": False, "events": logged}

    @app.post("/api/chat/stream")
    async def chat_stream(body: ChatBody, request: Request) -> EventSourceResponse:
        user = request.state.user_id

        async def sse() -> AsyncIterator[ServerSentEvent]:
            async for n, type_, data in runs.events(body, user):
                yield ServerSentEvent(data=json.dumps(data, ensure_ascii=False), event=type_, id=str(n))

        return EventSourceResponse(sse(), ping=15.0, headers={"Cache-Control": "no-store"})

    app.state.startup_error = None
    return app


def serve_bare(port: int, keys_file: Path, upstream: str, template_file: Path) -> None:
    """The bare app, served as ``saber serve`` serves Saber (same function, same uvicorn settings)."""
    from openai import AsyncOpenAI

    from saber.cli.serve import run
    from saber.server.listen import listen_socket

    template: list[dict[str, Any]] = json.loads(template_file.read_text(encoding="utf-8"))
    client = AsyncOpenAI(base_url=upstream, api_key="bench", max_retries=0)
    app = bare_app(KeyCheck(keys_file), BareRun(template, client))
    run(app, host="127.0.0.1", port=port, grace=10.0, sock=listen_socket("127.0.0.1", port))


# -- the load client (its own process) -------------------------------------------------------------

class Http:
    """One HTTP/1.1 keep-alive connection: just enough client for JSON and SSE responses."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def connect(cls, port: int) -> Http:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
        return cls(reader, writer)

    def close(self) -> None:
        self.writer.close()

    async def post(self, path: str, body: dict[str, Any], key: str, on_data: Any = None) -> tuple[int, bytes]:
        raw = json.dumps(body).encode()
        self.writer.write(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
                          f"Content-Type: application/json\r\nContent-Length: {len(raw)}\r\n\r\n".encode() + raw)
        status = int((await self.reader.readuntil(b"\r\n")).split()[1])
        headers: dict[bytes, bytes] = {}
        while (line := await self.reader.readuntil(b"\r\n")) != b"\r\n":
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip()
        if b"content-length" in headers:
            return status, await self.reader.readexactly(int(headers[b"content-length"]))
        parts = []
        while (size := int((await self.reader.readuntil(b"\r\n")).strip(), 16)) > 0:
            chunk = await self.reader.readexactly(size + 2)
            if on_data is not None:
                on_data(chunk)
            parts.append(chunk[:-2])
        await self.reader.readuntil(b"\r\n")
        return status, b"".join(parts)


def body_for(client: int, n: int) -> dict[str, Any]:
    return {"message": f"Say hello to client {client}, request {n}.", "mode": "chat"}


async def closed_loop(port: int, path: str, clients: int, duration: float) -> dict[str, Any]:
    """``clients`` clients posting to ``path`` back to back for ``duration`` s."""
    done = errors = 0
    statuses: dict[int, int] = {}
    end = time.perf_counter() + duration

    async def one(c: int) -> None:
        nonlocal done, errors
        http = await Http.connect(port)
        n = 0
        try:
            while time.perf_counter() < end:
                status, body = await http.post(path, body_for(c, n), key_of(c % USERS))
                n += 1
                if status == 200 and (path.endswith("/chat") or b"event: done" in body):
                    done += 1
                else:
                    errors += 1
                    statuses[status] = statuses.get(status, 0) + 1
        finally:
            http.close()

    started = time.perf_counter()
    await asyncio.gather(*(one(c) for c in range(clients)))
    elapsed = time.perf_counter() - started
    return {"per_second": done / elapsed, "completed": done, "errors": errors, "statuses": statuses}


async def burst(port: int, n: int) -> dict[str, Any]:
    """``n`` streams opened at once; seconds from connecting to each one's first event."""

    async def one(i: int) -> float | None:
        sent = time.perf_counter()
        first: list[float] = []

        def on_data(chunk: bytes) -> None:
            if not first and b"data:" in chunk:
                first.append(time.perf_counter() - sent)

        http = await Http.connect(port)
        try:
            status, body = await http.post("/api/chat/stream", body_for(10_000 + i, 0), key_of(i % USERS), on_data)
        finally:
            http.close()
        return first[0] if status == 200 and first and b"event: done" in body else None

    times = await asyncio.gather(*(one(i) for i in range(n)), return_exceptions=True)
    if os.environ.get("BENCH_DEBUG"):
        print(times[:3], file=sys.stderr)
    good = sorted(t for t in times if isinstance(t, float))
    return {"p50": statistics.median(good), "p99": _p99(good), "failed": n - len(good)}


def _p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[98] if len(values) > 1 else values[0]


def client_main(args: argparse.Namespace) -> None:
    if args.client == "burst":
        result = asyncio.run(burst(args.port, args.burst))
    else:
        path = "/api/chat" if args.client == "chat" else "/api/chat/stream"
        result = asyncio.run(closed_loop(args.port, path, args.clients, args.duration))
    print(json.dumps(result))


# -- orchestration ---------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def wait_ready(port: int, proc: subprocess.Popen[bytes], what: str) -> None:
    for _ in range(1200):
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                if s.recv(64).startswith(b"HTTP/1.1 200"):
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise SystemExit(f"{what} did not start")


def start_fake(tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    port_file = tmp / "fake.port"
    proc = subprocess.Popen([sys.executable, __file__, "--serve", "fake", "--port-file", str(port_file)])
    for _ in range(600):
        if port_file.exists() and port_file.read_text():
            return proc, f"http://127.0.0.1:{port_file.read_text()}/v1"
        time.sleep(0.05)
    raise SystemExit("the fake model did not start")


def saber_env(home: Path, upstream: str, keys_file: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
    env.update(SABER_HOME=str(home), SABER_LLM_BASE_URL=upstream, SABER_LLM_MODEL="fake-model",
               SABER_LLM_API_KEY="bench", SABER_SERVER_KEYS_FILE=str(keys_file), SABER_SEARCH_BACKEND="none",
               SABER_SERVER_MAX_RUNNING_PER_USER="64", SABER_EMBEDDING_PROVIDER="openai",
               SABER_EMBEDDING_BASE_URL=upstream, SABER_EMBEDDING_API_KEY="bench")
    return env


def start_saber(tmp: Path, upstream: str, keys_file: Path, log: Path, *, src: Path | None = None,
                home: str = "saber-home", **settings: str) -> tuple[subprocess.Popen[bytes], int]:
    """``saber serve`` on a free port; ``src``: another source tree's ``src`` (default: this
    checkout's, or what ``PYTHONPATH`` says); ``settings``: more ``SABER_*`` variables."""
    port = free_port()
    env = {**saber_env(tmp / home, upstream, keys_file), **settings}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    with log.open("ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "saber", "serve", "--port", str(port)],
                                env=env, stdout=out, stderr=out)
    wait_ready(port, proc, "saber serve")
    return proc, port


def start_bare(keys_file: Path, upstream: str, template: Path, log: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
    with log.open("ab") as out:
        proc = subprocess.Popen([sys.executable, __file__, "--serve", "bare", "--port", str(port), "--keys-file",
                                 str(keys_file), "--upstream", upstream, "--template", str(template)],
                                env=env, stdout=out, stderr=out)
    wait_ready(port, proc, "the bare app")
    return proc, port


def run_client(kind: str, port: int, args: argparse.Namespace) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, "--client", kind, "--port", str(port), "--clients", str(args.clients),
                          "--duration", str(args.duration), "--burst", str(args.burst)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"the {kind} client failed: {out.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def record_template(port: int, path: Path) -> int:
    """A Saber run's events (what the bare app replays); the number of events."""

    async def one() -> list[dict[str, Any]]:
        http = await Http.connect(port)
        try:
            status, body = await http.post("/api/chat", body_for(0, 0), key_of(0))
        finally:
            http.close()
        if status != 200:
            raise SystemExit(f"saber answered {status}: {body[:300]!r}")
        events: list[dict[str, Any]] = json.loads(body)["events"]
        return events

    events = asyncio.run(one())
    path.write_text(json.dumps(events), encoding="utf-8")
    return len(events)


def upstream_get(upstream: str, path: str) -> Any:
    """``GET`` a path of the fake model's server (``/v1/stats``, ``/v1/release``)."""
    with socket.create_connection(("127.0.0.1", int(upstream.split(":")[2].split("/")[0])), timeout=5) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
        raw = b""
        while chunk := s.recv(65536):
            raw += chunk
    return json.loads(raw.split(b"\r\n\r\n", 1)[1])


def upstream_stats(upstream: str) -> dict[str, int]:
    stats: dict[str, int] = upstream_get(upstream, "/v1/stats")
    return stats


def measure(kind: str, proc: subprocess.Popen[bytes], port: int, args: argparse.Namespace) -> dict[str, float]:
    cpu, calls = cpu_seconds(proc.pid), upstream_stats(args.upstream)
    chat = run_client("chat", port, args)
    cpu_per_run = (cpu_seconds(proc.pid) - cpu) / max(chat["completed"], 1)
    after = upstream_stats(args.upstream)
    made = max(after["requests"] - calls["requests"], 1)
    upstream = (f"upstream: {made / max(chat['completed'], 1):.2f} calls/run, "
                f"{(after['messages'] - calls['messages']) / made:.1f} messages and "
                f"{(after['bytes'] - calls['bytes']) / made:.0f} bytes/call")
    streams = run_client("stream", port, args)
    burst_ = run_client("burst", port, args)
    errors = chat["errors"] + streams["errors"] + burst_["failed"]
    print(f"  {kind:>6}: chat {chat['per_second']:7.1f}/s  streams {streams['per_second']:7.1f}/s  "
          f"first event p50 {burst_['p50'] * 1000:7.1f} ms p99 {burst_['p99'] * 1000:7.1f} ms  "
          f"CPU/run {cpu_per_run * 1000:5.1f} ms  errors {errors} {chat['statuses'] or ''}{streams['statuses'] or ''}  "
          f"rss {rss_mb(proc.pid):.0f} MB fds {open_fds(proc.pid)}\n         {upstream}", file=sys.stderr)
    return {"chat": chat["per_second"], "streams": streams["per_second"], "p50": burst_["p50"] * 1000,
            "p99": burst_["p99"] * 1000, "cpu": cpu_per_run * 1000, "errors": errors}


def profile(proc: subprocess.Popen[bytes], port: int, args: argparse.Namespace, out: Path) -> None:
    """py-spy samples the server while the chat clients load it; prints where its CPU goes."""
    spy = subprocess.Popen(["py-spy", "record", "--format", "raw", "--rate", "250", "--nonblocking", "-o", str(out),
                            "--pid", str(proc.pid), "--duration", str(int(args.duration)), *(["--gil"] if args.gil else [])],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    chat = run_client("chat", port, args)
    spy.wait()
    print(f"{chat['per_second']:.1f} chat req/s while profiled; samples in {out}", file=sys.stderr)
    summarize(out)
    print()
    areas(out)


def summarize(raw: Path, top: int = 45) -> None:
    """Inclusive share of the samples (idle ones left out) per function, from py-spy's raw format."""
    inclusive: dict[str, int] = {}
    total = 0
    for line in raw.read_text(encoding="utf-8").splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        if any(f.startswith(("select (", "poll (", "epoll", "_run_once (", "wait (threading")) for f in frames[-1:]):
            continue  # the loop or a thread waiting: not CPU
        total += int(count)
        for name in {f.split(" (")[0] + " (" + f.split(" (")[1].split(":")[0] + ")" for f in frames if " (" in f}:
            inclusive[name] = inclusive.get(name, 0) + int(count)
    for name, n in sorted(inclusive.items(), key=lambda kv: -kv[1])[:top]:
        print(f"{n / max(total, 1) * 100:6.1f}%  {name}")


AREAS: list[tuple[str, tuple[str, ...]]] = [
    ("the openai client (request, httpx, parsing the streamed chunks)",
     ("openai/", "httpx", "httpcore", "anyio/", "sniffio/", "saber/llm/openai_compat")),
    ("secret redaction", ("saber/redact", "saber/agent/redaction")),
    ("history, preferences, memories (SQLite)", ("saber/agent/memory/", "saber/db/", "sqlite3")),
    ("worker-thread hand-offs (submitting, waking)",
     ("concurrent/futures", "threading.py", "to_thread (", "run_in_executor", "_write_to_self", "_read_from_self")),
    ("run manager and event log", ("saber/runs/",)),
    ("routes, SSE, middleware, metrics", ("saber/server/", "sse_starlette/", "saber/observability/")),
    ("FastAPI, pydantic, Starlette", ("fastapi/", "pydantic", "starlette/")),
    ("the agent (turn, routing, model wrappers, events)", ("saber/",)),
    ("uvicorn and h11 (HTTP parsing, writing)", ("uvicorn/", "h11/")),
]
"""Where a sample's time goes: the area of its innermost frame that belongs to one (so the openai
client's own work counts there, not under the agent that called it)."""


def areas(raw: Path) -> None:
    """Each sample counted once, for the innermost frame that belongs to one of ``AREAS`` (idle
    samples and worker threads waiting for work left out); the rest is the event loop itself."""
    counts: dict[str, int] = {}
    total = 0
    for line in raw.read_text(encoding="utf-8").splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        if frames[-1].startswith(("select (", "poll (", "epoll", "_run_once (", "wait (threading", "get (queue")):
            continue
        if frames[-1].startswith("_worker (concurrent"):
            continue  # a worker thread waiting for work
        total += int(count)
        area = next((name for frame in reversed(frames) for name, marks in AREAS if any(m in frame for m in marks)),
                    "the event loop and the rest")
        counts[area] = counts.get(area, 0) + int(count)
    for name, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f"{n / max(total, 1) * 100:6.1f}%  {name}")


def report(results: dict[str, list[dict[str, float]]]) -> None:
    rows = [("chat req/s (%d clients)", "chat", "{:.1f}"), ("streams/s (read to the end)", "streams", "{:.1f}"),
            ("first event p50 at %d streams (ms)", "p50", "{:.1f}"), ("first event p99 at %d streams (ms)", "p99", "{:.1f}"),
            ("CPU per run (ms)", "cpu", "{:.2f}"), ("error responses", "errors", "{:.0f}")]
    pairs = [("saber", "bare"), *([("before", "bare"), ("saber", "before")] if "before" in results else [])]
    head = "".join(f" {kind:>9}" for kind in results) + "".join(f" {a + '/' + b:>12}" for a, b in pairs)
    print(f"{'median over rounds':40}{head}")
    for label, key, fmt in rows:
        medians = "".join(f" {fmt.format(statistics.median(r[key] for r in runs)):>9}" for runs in results.values())
        shown = label % REPORT_PARAMS[key] if "%d" in label else label
        print(f"{shown:40}{medians}" + "".join(f" {_ratio(results[a], results[b], key):>12}" for a, b in pairs))


def _ratio(these: list[dict[str, float]], those: list[dict[str, float]], key: str) -> str:
    """The median of the per-round ratios."""
    ratios = [s[key] / b[key] for s, b in zip(these, those, strict=True) if b[key]]
    return f"{statistics.median(ratios):.2f}" if ratios else "-"


REPORT_PARAMS: dict[str, int] = {}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--serve", choices=["fake", "bare"], help=argparse.SUPPRESS)
    parser.add_argument("--client", choices=["chat", "stream", "burst"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--port-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--keys-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--upstream", help=argparse.SUPPRESS)
    parser.add_argument("--template", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=8.0, help="seconds of each closed-loop phase")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--burst", type=int, default=500, help="streams opened at once")
    parser.add_argument("--profile", type=Path, metavar="RAW", help="profile a server with py-spy under the chat load instead")
    parser.add_argument("--profile-side", choices=["saber", "bare", "before"], default="saber")
    parser.add_argument("--gil", action="store_true",
                        help="--profile: only samples of the thread holding the GIL (no thread waiting for it)")
    parser.add_argument("--before", metavar="REV", help="also measure saber serve from this revision's source")
    args = parser.parse_args()
    if args.profile_side == "before" and not args.before:
        parser.error("--profile-side before needs --before REV")
    if args.serve == "fake":
        serve_fake(args.port_file)
        return
    if args.serve == "bare":
        serve_bare(args.port, args.keys_file, args.upstream, args.template)
        return
    if args.client:
        client_main(args)
        return
    REPORT_PARAMS.update(chat=args.clients, p50=args.burst, p99=args.burst)
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        keys_file = tmp / "keys"
        write_keys(keys_file)
        fake, upstream = start_fake(tmp)
        args.upstream = upstream
        procs: list[subprocess.Popen[bytes]] = [fake]
        try:
            saber, saber_port = start_saber(tmp, upstream, keys_file, tmp / "saber.log")
            procs.append(saber)
            count = record_template(saber_port, tmp / "template.json")
            bare, bare_port = start_bare(keys_file, upstream, tmp / "template.json", tmp / "bare.log")
            procs.append(bare)
            sides = {"saber": (saber, saber_port), "bare": (bare, bare_port)}
            if args.before:
                sys.path.insert(0, str(Path(__file__).resolve().parent))
                from source_trees import extract_src

                src = extract_src(args.before, Path(tempfile.mkdtemp(dir=tmp)))
                before, before_port = start_saber(tmp, upstream, keys_file, tmp / "before.log", src=src,
                                                  home="before-home")
                procs.append(before)
                sides["before"] = (before, before_port)
            if args.profile is not None:
                profile(*sides[args.profile_side], args, args.profile)
                return
            print(f"load average {os.getloadavg()[0]:.2f}; {os.cpu_count()} CPUs; {count} events per run; "
                  + ", ".join(f"{kind} pid {proc.pid}" for kind, (proc, _) in sides.items()), file=sys.stderr)
            for _, port in sides.values():  # warm-up: first requests of each route
                run_client("chat", port, argparse.Namespace(**{**vars(args), "duration": 1.0}))
            results: dict[str, list[dict[str, float]]] = {kind: [] for kind in sides}
            for r in range(args.rounds):
                order = list(sides) if r % 2 == 0 else list(sides)[::-1]
                print(f"round {r + 1} (load average {os.getloadavg()[0]:.2f})", file=sys.stderr)
                for kind in order:
                    results[kind].append(measure(kind, *sides[kind], args))
            report(results)
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(30)


if __name__ == "__main__":
    main()
