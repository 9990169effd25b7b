"""Load and soak of ``saber serve``: held streams under chat load, then mixed load with hang-ups.

    python bench/server_soak.py [--streams 200] [--chats 1000] [--minutes 30] [--json]

The server is ``python -m saber serve`` (257 users, each its own API key) against the fake
OpenAI server of ``bench/server.py``, each in a process of its own; the load comes from this one.

1. Held streams: ``--streams`` SSE streams are opened (their model calls wait) and, while all
   of them are open, ``--chats`` ``POST /api/chat`` requests are made by 32 clients; then the
   held model calls answer. Every stream must end with ``done``, every chat answer 200.
2. Mixed load for ``--minutes``: 32 clients, each request at random one of: a chat request, a
   stream read to its end, a stream the client hangs up on after its first events, a stream
   reconnected with ``Last-Event-ID`` (``/api/tasks/{id}/events``) after a hang-up with
   ``detach``. Every answer must be 200 (a hang-up is the client's, not an error).

The server process's resident memory and open file descriptors are read from ``/proc`` every few
seconds; growth is measured from the end of the first minute of phase 2 (caches, pools and the
kept finished runs filled) to the end. Exit status 1 when an answer was not 200, a stream did
not end with ``done``, or the growth passed ``--max-rss-growth-mb`` / ``--max-fd-growth``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import server as bench  # bench/server.py: the fake model, the client, /proc readings)


@dataclass
class Tally:
    """Answers by outcome, and the latency of chat requests."""

    ok: int = 0
    hung_up: int = 0
    reconnected: int = 0
    stale_connections: int = 0
    """Keep-alive connections the server had closed while idle (sent again on a new one)."""
    bad: dict[str, int] = field(default_factory=dict)
    chat_seconds: list[float] = field(default_factory=list)

    def fail(self, what: str) -> None:
        self.bad[what] = self.bad.get(what, 0) + 1


async def held_streams(port: int, upstream: str, streams: int, chats: int, hold: float, tally: Tally) -> dict[str, Any]:
    """Phase 1: ``streams`` open (each has seen its first event) while ``chats`` chat requests run;
    their model calls answer when the chats are done (or after ``hold`` seconds)."""
    opened = asyncio.Event()
    seen = 0

    async def stream(i: int) -> None:
        nonlocal seen
        counted = False

        def on_data(chunk: bytes) -> None:
            nonlocal seen, counted
            if not counted and b"data:" in chunk:
                counted = True
                seen += 1
                if seen == streams:
                    opened.set()

        http = await bench.Http.connect(port)
        try:
            status, body = await http.post("/api/chat/stream", {"message": f"hold {hold} stream {i}", "mode": "chat"},
                                           bench.key_of(i % bench.USERS), on_data)
        finally:
            http.close()
        if status == 200 and b"event: done" in body and b'"interrupted": false' in body and bench.ANSWER.encode() in body:
            tally.ok += 1
        else:
            tally.fail(f"held stream {status}")

    holders = [asyncio.create_task(stream(i)) for i in range(streams)]
    await asyncio.wait_for(opened.wait(), timeout=max(60.0, hold))
    started = time.perf_counter()
    queue = list(range(chats))

    async def client(c: int) -> None:
        http = await bench.Http.connect(port)
        try:
            while queue:
                n = queue.pop()
                sent = time.perf_counter()
                status, _ = await http.post("/api/chat", bench.body_for(c, n), bench.key_of((streams + c) % bench.USERS))
                tally.chat_seconds.append(time.perf_counter() - sent)
                if status == 200:
                    tally.ok += 1
                else:
                    tally.fail(f"chat {status}")
        finally:
            http.close()

    await asyncio.gather(*(client(c) for c in range(32)))
    chats_took = time.perf_counter() - started
    still_open = sum(not h.done() for h in holders)
    await asyncio.to_thread(bench.upstream_get, upstream, "/v1/release")
    await asyncio.gather(*holders)
    return {"chats_per_second": chats / chats_took, "streams_open_after_chats": still_open,
            "chat_p99_ms": bench._p99(tally.chat_seconds) * 1000}


async def hang_up_then_reconnect(port: int, c: int, n: int, tally: Tally) -> None:
    """A stream with ``detach``, closed after its first event, then read again from where it was."""
    key = bench.key_of(c % bench.USERS)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    raw = json.dumps({**bench.body_for(c, n), "detach": True}).encode()
    writer.write(f"POST /api/chat/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
                 f"Content-Type: application/json\r\nContent-Length: {len(raw)}\r\n\r\n".encode() + raw)
    head = await reader.readuntil(b"\r\n\r\n")
    task_id = next((line.split(b":", 1)[1].strip().decode() for line in head.split(b"\r\n")
                    if line.lower().startswith(b"x-task-id:")), "")
    if b" 200 " in head.split(b"\r\n")[0]:
        await reader.readuntil(b"data:")
    writer.close()
    if b" 200 " not in head.split(b"\r\n")[0] or not task_id:
        tally.fail("detached stream " + head.split(b"\r\n")[0].decode())
        return
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET /api/tasks/{task_id}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
                 f"Last-Event-ID: 1\r\nConnection: close\r\n\r\n".encode())
    body = await reader.read()
    writer.close()
    if body.startswith(b"HTTP/1.1 200") and b"event: done" in body and b"\nid: 1\r\n" not in body:
        tally.reconnected += 1
    else:
        tally.fail("reconnect " + body.split(b"\r\n")[0].decode())


async def hang_up(port: int, c: int, n: int, tally: Tally) -> None:
    """A stream the client closes after its first event (the run is cancelled: nobody reads it)."""
    http = await bench.Http.connect(port)
    key = bench.key_of(c % bench.USERS)
    raw = json.dumps(bench.body_for(c, n)).encode()
    http.writer.write(f"POST /api/chat/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
                      f"Content-Type: application/json\r\nContent-Length: {len(raw)}\r\n\r\n".encode() + raw)
    status_line = await http.reader.readuntil(b"\r\n")
    if b" 200 " in status_line:
        await http.reader.readuntil(b"data:")
    http.close()
    if b" 200 " in status_line:
        tally.hung_up += 1
    else:
        tally.fail("stream " + status_line.decode().strip())


async def mixed(port: int, pid: int, minutes: float, tally: Tally, samples: list[dict[str, float]]) -> None:
    """Phase 2: mixed load for ``minutes``, reading the server's memory and fds every 5 s."""
    end = time.perf_counter() + minutes * 60
    rng = random.Random(32)

    async def post(c: int, path: str, n: int) -> tuple[int, bytes]:
        """On the client's keep-alive connection; a new one when the server closed it while idle
        (uvicorn does after 5 s; a client sends again on a new connection, as HTTP clients do)."""
        try:
            return await connections[c].post(path, bench.body_for(c, n), bench.key_of(c % bench.USERS))
        except (ConnectionError, asyncio.IncompleteReadError):
            connections[c].close()
            connections[c] = await bench.Http.connect(port)
            tally.stale_connections += 1
            return await connections[c].post(path, bench.body_for(c, n), bench.key_of(c % bench.USERS))

    connections: dict[int, bench.Http] = {}

    async def client(c: int) -> None:
        connections[c] = await bench.Http.connect(port)
        n = 0
        try:
            while time.perf_counter() < end:
                n += 1
                pick = rng.random()
                if pick < 0.45:
                    sent = time.perf_counter()
                    status, _ = await post(c, "/api/chat", n)
                    tally.chat_seconds.append(time.perf_counter() - sent)
                    tally.ok += status == 200
                    if status != 200:
                        tally.fail(f"chat {status}")
                elif pick < 0.75:
                    status, body = await post(c, "/api/chat/stream", n)
                    tally.ok += status == 200 and b"event: done" in body
                    if status != 200 or b"event: done" not in body:
                        tally.fail(f"stream {status}")
                elif pick < 0.9:
                    await hang_up(port, c, n, tally)
                else:
                    await hang_up_then_reconnect(port, c, n, tally)
        finally:
            connections[c].close()

    async def sampler() -> None:
        started = time.perf_counter()
        while time.perf_counter() < end:
            samples.append({"t": time.perf_counter() - started, "rss_mb": bench.rss_mb(pid), "fds": bench.open_fds(pid)})
            await asyncio.sleep(5)

    await asyncio.gather(sampler(), *(client(c) for c in range(32)))


def growth(samples: list[dict[str, float]], key: str) -> float:
    """From the first sample after a minute (or after the first third of a shorter run) to the last."""
    settled = next((s for s in samples if s["t"] >= min(60.0, samples[-1]["t"] / 3)), samples[0])
    return samples[-1][key] - settled[key]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--chats", type=int, default=1000)
    parser.add_argument("--hold", type=float, default=300.0,
                        help="seconds the held streams' model calls wait at most (they answer once the chats are done)")
    parser.add_argument("--minutes", type=float, default=30.0, help="minutes of mixed load")
    parser.add_argument("--max-rss-growth-mb", type=float, default=64.0)
    parser.add_argument("--max-fd-growth", type=int, default=32)
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        keys_file = tmp / "keys"
        bench.write_keys(keys_file)
        fake, upstream = bench.start_fake(tmp)
        procs: list[subprocess.Popen[bytes]] = [fake]
        try:
            held = str(args.hold + 60)  # the held model calls are not stalls: a model may think that long
            saber, port = bench.start_saber(tmp, upstream, keys_file, tmp / "saber.log", SABER_LLM_STALL_TIMEOUT=held,
                                            SABER_LLM_TIMEOUT=held, SABER_AGENT_REQUEST_DEADLINE=held)
            procs.append(saber)
            tally = Tally()
            before = {"rss_mb": bench.rss_mb(saber.pid), "fds": bench.open_fds(saber.pid)}
            phase1 = asyncio.run(held_streams(port, upstream, args.streams, args.chats, args.hold, tally))
            after1 = {"rss_mb": bench.rss_mb(saber.pid), "fds": bench.open_fds(saber.pid)}
            print(f"held streams: {args.streams} open while {args.chats} chats ran at "
                  f"{phase1['chats_per_second']:.1f}/s (chat p99 {phase1['chat_p99_ms']:.0f} ms), "
                  f"{phase1['streams_open_after_chats']} still open after them; answers not 200: {tally.bad or 'none'}; "
                  f"rss {before['rss_mb']:.0f} → {after1['rss_mb']:.0f} MB, fds {before['fds']} → {after1['fds']}",
                  file=sys.stderr)
            samples: list[dict[str, float]] = []
            phase2_tally = Tally()
            asyncio.run(mixed(port, saber.pid, args.minutes, phase2_tally, samples))
            rss_growth, fd_growth = growth(samples, "rss_mb"), growth(samples, "fds")
            chat_ms = sorted(s * 1000 for s in phase2_tally.chat_seconds)
            result: dict[str, Any] = {
                "phase1": {**phase1, "answers_ok": tally.ok, "not_ok": tally.bad, "rss_mb": after1["rss_mb"],
                           "fds": after1["fds"]},
                "phase2": {"minutes": args.minutes, "answers_ok": phase2_tally.ok, "hung_up": phase2_tally.hung_up,
                           "reconnected": phase2_tally.reconnected, "not_ok": phase2_tally.bad,
                           "stale_keep_alive": phase2_tally.stale_connections,
                           "chat_p50_ms": statistics.median(chat_ms), "chat_p99_ms": bench._p99(chat_ms),
                           "rss_mb_max": max(s["rss_mb"] for s in samples), "rss_growth_mb": rss_growth,
                           "fds_max": max(s["fds"] for s in samples), "fd_growth": fd_growth},
            }
            ok = (not tally.bad and not phase2_tally.bad and result["phase1"]["answers_ok"] == args.streams + args.chats
                  and phase1["streams_open_after_chats"] == args.streams
                  and rss_growth <= args.max_rss_growth_mb and fd_growth <= args.max_fd_growth)
            result["ok"] = ok
            p2 = result["phase2"]
            print(f"mixed load, {args.minutes} min: {p2['answers_ok']} answers, {p2['hung_up']} hang-ups, "
                  f"{p2['reconnected']} reconnections, {p2['stale_keep_alive']} idle keep-alive connections closed; not 200: {p2['not_ok'] or 'none'}; chat p50 "
                  f"{p2['chat_p50_ms']:.0f} ms p99 {p2['chat_p99_ms']:.0f} ms; rss max {p2['rss_mb_max']:.0f} MB, "
                  f"growth {rss_growth:+.1f} MB (bound {args.max_rss_growth_mb}); fds max {p2['fds_max']:.0f}, "
                  f"growth {fd_growth:+.0f} (bound {args.max_fd_growth})", file=sys.stderr)
            if args.json:
                print(json.dumps(result))
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(30)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
