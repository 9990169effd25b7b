"""Fault test of the distributed mode: real PostgreSQL and Redis, an API node, two workers, faults.

    python bench/faults/faults.py [--runs 16] [--json]

Starts a private PostgreSQL (the ``pgserver`` wheel, in a temporary folder), a private
``redis-server`` on a free port, a fake model, one ``saber serve`` API node and two ``saber
worker`` processes. It sends ``--runs`` detached react runs of three steps each (in waves, so
runs are under way at every fault), follows each run's events over SSE as a client would
(reconnecting with ``Last-Event-ID`` when a stream drops), and meanwhile injects, one after the
other:

1. Redis killed (SIGKILL) and restarted empty on the same port;
2. PostgreSQL stopped and started again;
3. Redis frozen with SIGSTOP for 10 s (a network stall), then SIGCONT;
4. the API node killed (SIGKILL) and started again on the same port;
5. a worker killed with ``kill -9`` (and a new one started).

It reports runs done, stuck (not finished a minute after the last fault), lost (the API does not
know them), failed; steps that ran to their end twice (the goal is none) and steps started again
after a ``kill -9`` cut them short (at-least-once: they carry the same idempotency key); the
seconds from the end of the last fault to the last run done; followers that saw every run's
``done``; processes that exited on their own. ``tests/integration/cluster/test_cluster_faults.py``
runs it and asserts the goal.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
STEPS = 3
STEP_SECONDS = 5.0
SETTLE_SECONDS = 60.0
"""Every run should be done this long after the last fault ended."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def plan_reply(body: dict[str, Any]) -> str:
    """The fake model: a planner request for "fault run <task>" gets a chain of witness steps; any
    other request (the answer) gets a short text."""
    messages = body.get("messages") or []
    text = " ".join(str(m.get("content") or "") for m in messages)
    if "task planner" not in text:
        return "finished"
    query = str(messages[-1].get("content") or "")
    task = query[query.rindex("fault run "):].split()[2]
    plan = [{"id": f"n{i}", "tool": "witness", "params": {"task": task, "step": f"n{i}", "seconds": STEP_SECONDS},
             "depends_on": [f"n{i - 1}"] if i > 1 else []} for i in range(1, STEPS + 1)]
    return json.dumps(plan)


# -- the services ----------------------------------------------------------------------------------


class Redis:
    """A private redis-server without persistence: a restart comes back empty."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.port = folder, free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [shutil.which("redis-server") or "redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", str(self.folder)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return
            time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, sig)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(OSError):
                os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.terminate()
            self.proc.wait(timeout=10)


class Postgres:
    """A private PostgreSQL from the pgserver wheel, stopped and started with its ``pg_ctl``."""

    def __init__(self, folder: Path) -> None:
        import pgserver

        self.server: Any = pgserver.get_server(folder, cleanup_mode="stop")  # type: ignore[attr-defined]
        self.folder = folder
        self.admin_url: str = self.server.get_uri()

    def create_database(self, name: str) -> str:
        self.server.psql(f'CREATE DATABASE "{name}";')
        return str(self.server.get_uri(name))

    def _ctl(self, *args: str) -> None:
        from pgserver import pg_ctl  # type: ignore[attr-defined]

        pg_ctl(list(args), pgdata=self.folder, user=self.server.system_user, timeout=30)

    def stop(self) -> None:
        self._ctl("-w", "-m", "fast", "stop")

    def start(self) -> None:
        socket_dir = self.admin_url.split("host=", 1)[1].split("&", 1)[0]
        self._ctl("-w", "-o", '-h ""', "-o", f"-k {socket_dir}", "-l", str(self.folder / "log"), "start")

    def cleanup(self) -> None:
        self.server.cleanup()
        # pgserver stops the postmaster it started; the one start() started after a stop is ours
        # (left running, every fault run would leave a PostgreSQL behind).
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError):
            self._ctl("-w", "-m", "fast", "stop")


@dataclass
class Nodes:
    """The saber processes: API nodes and workers, as real subprocesses."""

    root: Path
    env: dict[str, str]
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    killed: set[int] = field(default_factory=set)
    count: int = 0

    def _start(self, args: list[str], name: str) -> subprocess.Popen[bytes]:
        self.count += 1
        home = self.root / f"{name}-{self.count}"
        home.mkdir(parents=True)
        with open(home / "log.txt", "wb") as log:
            proc = subprocess.Popen([sys.executable, "-m", "saber.cli", *args], env=dict(self.env, SABER_HOME=str(home)),
                                    stdout=log, stderr=subprocess.STDOUT)
        proc.log_path = home / "log.txt"  # type: ignore[attr-defined]
        self.procs.append(proc)
        return proc

    @staticmethod
    def output(proc: subprocess.Popen[bytes]) -> str:
        return Path(proc.log_path).read_text(encoding="utf-8", errors="replace")  # type: ignore[attr-defined]

    def _ready(self, proc: subprocess.Popen[bytes], check: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"{what} exited: {self.output(proc)[-3000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if check():
                    return
            time.sleep(0.2)
        raise RuntimeError(f"{what} not ready: {self.output(proc)[-3000:]}")

    def api(self, port: int) -> subprocess.Popen[bytes]:
        proc = self._start(["serve", "--port", str(port)], "api")
        self._ready(proc, lambda: httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200, "api node")
        return proc

    def worker(self, concurrency: int) -> subprocess.Popen[bytes]:
        proc = self._start(["worker", "--concurrency", str(concurrency)], "worker")
        self._ready(proc, lambda: "taking runs" in self.output(proc), "worker")
        return proc

    def kill(self, proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
        self.killed.add(proc.pid)
        proc.send_signal(sig)
        proc.wait(timeout=60)

    def exited(self) -> list[str]:
        """Processes that exited without being killed by the test."""
        return [f"pid {p.pid} ({p.args[3] if isinstance(p.args, list) else p.args!r}): exit {p.returncode}"
                for p in self.procs if p.poll() is not None and p.pid not in self.killed]

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# -- the client side -------------------------------------------------------------------------------


@dataclass
class Follower:
    """Follows one run's events as a client would: reconnecting with Last-Event-ID when the stream
    drops, until ``done``."""

    api: str
    task_id: str
    user: str
    seqs: list[int] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    reconnects: int = 0
    done: bool = False
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        last = 0
        while not self.done and not self.stop.is_set():
            headers = {"Last-Event-ID": str(last)} if last else {}
            try:
                with httpx.stream("GET", f"{self.api}/api/tasks/{self.task_id}/events", params={"user_id": self.user},
                                  headers=headers, timeout=httpx.Timeout(5.0, read=40.0)) as r:
                    if r.status_code != 200:
                        raise httpx.HTTPError(f"status {r.status_code}")
                    for seq, kind in _sse(r.iter_lines()):
                        if kind == "reconnecting":
                            self.reconnects += 1
                            continue
                        self.seqs.append(seq)
                        self.types.append(kind)
                        last = max(last, seq)
                        if kind == "done":
                            self.done = True
                            return
            except (httpx.HTTPError, OSError):
                pass
            self.reconnects += 1
            time.sleep(0.5)

    def repeated(self) -> int:
        """Events received twice (the same sequence number again)."""
        return sum(n - 1 for n in Counter(self.seqs).values() if n > 1)


def _sse(lines: Iterator[str]) -> Iterator[tuple[int, str]]:
    seq, kind = 0, ""
    for line in lines:
        if line.startswith("id:"):
            seq = int(line[3:].strip() or 0)
        elif line.startswith("event:"):
            kind = line[6:].strip()
        elif line == "" and kind:
            yield seq, kind
            seq, kind = 0, ""


def submit(api: str, task_id: str, user: str, deadline: float) -> None:
    """Send a detached react run, again (the same task id) until the API node accepted it."""
    body = {"message": f"please do fault run {task_id} now", "mode": "react", "user_id": user, "task_id": task_id,
            "detach": True}
    while time.monotonic() < deadline:
        try:
            with httpx.stream("POST", f"{api}/api/chat/stream", json=body, timeout=10) as r:
                if r.status_code in (200, 409):  # 409: an earlier try was queued
                    return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"run {task_id} was never accepted")


FINISHED = ("done", "failed", "cancelled")


@dataclass
class Poller:
    """Reads every run's status from the API node until all are finished, noting when each got done."""

    api: str
    runs: list[tuple[str, str]]
    status: dict[str, str] = field(default_factory=dict)
    done_at: dict[str, float] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self.stop.is_set():
            for task_id, user in self.runs:
                if self.status.get(task_id) in FINISHED:
                    continue
                try:
                    r = httpx.get(f"{self.api}/api/tasks/{task_id}", params={"user_id": user}, timeout=5)
                except httpx.HTTPError:
                    break
                self.status[task_id] = str(r.json().get("status")) if r.status_code == 200 else f"http {r.status_code}"
                if self.status[task_id] == "done":
                    self.done_at[task_id] = time.monotonic()
            if all(self.status.get(t) in FINISHED for t, _ in self.runs):
                return
            time.sleep(0.5)


# -- the test --------------------------------------------------------------------------------------


@dataclass
class Report:
    runs: int
    done: int = 0
    failed: int = 0
    cancelled: int = 0
    stuck: int = 0
    lost: int = 0
    steps_ran_twice: int = 0
    """Steps that ran to their end more than once, the first time in a process that lived on (goal: 0)."""
    steps_rerun_after_kill: int = 0
    """Steps that ended in the worker killed with kill -9 before their checkpoint was written, and
    ran again after it (at-least-once, with the same idempotency key)."""
    steps_restarted: int = 0
    """Steps started again after a kill -9 cut them short (at-least-once)."""
    restarted_with_other_key: int = 0
    """Of those, started again with a different idempotency key (goal: 0)."""
    seconds_to_last_done: float | None = None
    """From the end of the last fault to the last run done."""
    followers_saw_done: int = 0
    events_repeated: int = 0
    exited: list[str] = field(default_factory=list)
    statuses: dict[str, str] = field(default_factory=dict)
    faults: list[tuple[str, float, float]] = field(default_factory=list)
    """(fault, start, end) in seconds from the first run sent."""
    in_flight: list[int] = field(default_factory=list)
    """Runs sent and not finished when each fault began."""
    claims: dict[str, int] = field(default_factory=dict)
    """Times the workers took each run from the queue (1, or 2 for a run of the killed worker)."""
    total_seconds: float = 0.0

    def ok(self) -> bool:
        return (self.done == self.runs and self.steps_ran_twice == 0 and self.restarted_with_other_key == 0
                and not self.exited and self.seconds_to_last_done is not None
                and self.seconds_to_last_done <= SETTLE_SECONDS)

    def lines(self) -> list[str]:
        return [f"runs done {self.done}/{self.runs}, stuck {self.stuck}, lost {self.lost}, failed {self.failed}, "
                f"cancelled {self.cancelled}",
                f"steps run twice {self.steps_ran_twice}; steps started again {self.steps_restarted} (with another "
                f"idempotency key: {self.restarted_with_other_key}), of which ended before the kill -9 but not "
                f"yet checkpointed {self.steps_rerun_after_kill}",
                f"last fault ended -> last run done: {self.seconds_to_last_done if self.seconds_to_last_done is None else round(self.seconds_to_last_done, 1)} s",
                f"followers that saw done {self.followers_saw_done}/{self.runs}, events repeated {self.events_repeated}",
                f"processes exited on their own: {len(self.exited)} {self.exited if self.exited else ''}",
                f"claims per run: at most {max(self.claims.values(), default=0)}, "
                f"{sum(1 for n in self.claims.values() if n > 1)} run(s) taken more than once",
                "faults (runs in flight): " + ", ".join(f"{name} {start:.1f}-{end:.1f} s ({n})" for (name, start, end), n
                                                    in zip(self.faults, self.in_flight, strict=False))]


class FaultRun:
    """One fault test: the services, the cluster, the runs and their followers, and the faults."""

    def __init__(self, workdir: Path, runs: int, log: Callable[[str], None]) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.workdir, self.log = workdir, log
        self.witness = workdir / "witness.jsonl"
        self.wanted = [(f"f{i:02d}", ("u1", "u2")[i % 2]) for i in range(runs)]
        self.pg = Postgres(workdir / "pgdata")
        self.redis = Redis(workdir / "redis")
        self.port = free_port()
        self.api = f"http://127.0.0.1:{self.port}"
        self.nodes: Nodes | None = None
        self.api_proc: subprocess.Popen[bytes] | None = None
        self.workers: list[subprocess.Popen[bytes]] = []
        self.followers: list[Follower] = []
        self.poller = Poller(self.api, self.wanted)
        self.sent: set[str] = set()
        self.faults: list[tuple[str, float, float]] = []
        self.in_flight: list[int] = []
        self.t0 = 0.0

    def env(self, llm_url: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
        env.update({
            "SABER_DATABASE_URL": self.pg.create_database("saber_faults"), "SABER_REDIS_URL": self.redis.url,
            "SABER_CLUSTER_REDIS_PREFIX": "faults:", "SABER_LLM_BASE_URL": llm_url, "SABER_LLM_MODEL": "fake-model",
            "SABER_LLM_API_KEY": "k", "SABER_EMBEDDING_PROVIDER": "openai", "SABER_EMBEDDING_BASE_URL": llm_url,
            "SABER_EMBEDDING_API_KEY": "k", "SABER_EMBEDDING_DIM": "64", "SABER_SEARCH_BACKEND": "none",
            "SABER_TOOLS_MODULES": "fault_tools", "SABER_TEST_WITNESS": str(self.witness),
            "SABER_CLUSTER_LEASE": "6", "SABER_GRAPH_CHECKPOINT_LEASE": "6", "SABER_SERVER_MAX_RUNNING_PER_USER": "8",
            "SABER_CLUSTER_WORKER_GRACE": "5",
            "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT / "src"), env.get("PYTHONPATH", "")]),
        })
        return env

    def run(self) -> Report:
        from saber.testing import FakeOpenAIServer

        self.redis.start()
        try:
            with FakeOpenAIServer([plan_reply] * (len(self.wanted) * 20)) as llm:
                self.nodes = Nodes(self.workdir / "nodes", self.env(llm.base_url))
                self.api_proc = self.nodes.api(self.port)
                self.workers = [self.nodes.worker(8), self.nodes.worker(8)]
                self.log("cluster up: 1 API node, 2 workers")
                return self._inject()
        finally:
            self.poller.stop.set()
            for follower in self.followers:
                follower.stop.set()
            if self.nodes is not None:
                self.nodes.stop()
            self.redis.stop()
            self.pg.cleanup()

    def _at(self, seconds: float) -> None:
        time.sleep(max(0.0, self.t0 + seconds - time.monotonic()))

    def _send(self, wave: list[tuple[str, str]], when: float) -> None:
        self._at(when)
        for task_id, user in wave:
            submit(self.api, task_id, user, time.monotonic() + 120)
            self.sent.add(task_id)
            follower = Follower(self.api, task_id, user)
            self.followers.append(follower)
            threading.Thread(target=follower.run, daemon=True).start()

    def _inject(self) -> Report:
        self.t0 = time.monotonic()
        senders = [threading.Thread(target=self._send, args=(self.wanted[i::4], i * 8.0), daemon=True)
                   for i in range(3)]  # a wave every 8 s: runs are under way at every fault
        for sender in senders:
            sender.start()
        poll_thread = threading.Thread(target=self.poller.run, daemon=True)
        poll_thread.start()
        for when, name, act in ((4.0, "redis killed, restarted empty", self.redis_restart),
                                (10.0, "postgresql stopped and started", self.pg_restart),
                                (17.0, "redis frozen (SIGSTOP) for 10 s", self.redis_stall),
                                (28.0, "api node killed and restarted", self.api_restart),
                                (0.0, "worker kill -9 (and replaced)", self.worker_kill)):
            self._at(when)
            if act == self.worker_kill:  # the last wave, sent once the API node is back, is under way at the kill
                self._send(self.wanted[3::4], 0.0)
                self._steps_under_way(len(self.wanted[3::4]))
            self.in_flight.append(self._unfinished())
            start = time.monotonic() - self.t0
            self.log(f"{start:5.1f} s  fault: {name}")
            act()
            self.faults.append((name, start, time.monotonic() - self.t0))
        last_fault = self.t0 + max(end for _, _, end in self.faults)
        for sender in senders:
            sender.join(timeout=120)
        poll_thread.join(timeout=max(1.0, last_fault + SETTLE_SECONDS + 30 - time.monotonic()))
        self.poller.stop.set()
        time.sleep(1.0)  # the followers read the last done
        assert self.nodes is not None
        report = _report(self.wanted, self.poller, self.followers, self.witness, self.faults, last_fault, self.t0,
                         killed=self.nodes.killed)
        report.in_flight = self.in_flight
        report.claims = self._claims()
        assert self.nodes is not None
        report.exited = self.nodes.exited()
        return report

    def _witnessed(self) -> list[dict[str, Any]]:
        if not self.witness.exists():
            return []
        return [json.loads(line) for line in self.witness.read_text().splitlines() if line.strip()]

    def _unfinished(self) -> int:
        """Runs sent whose steps have not all ended (read from the witness lines, not the API: it may be down)."""
        ended: dict[str, set[str]] = {}
        for w in self._witnessed():
            if w["at"] == "end":
                ended.setdefault(w["task"], set()).add(w["step"])
        return sum(1 for t in self.sent if len(ended.get(t, ())) < STEPS)

    def _steps_under_way(self, runs: int, timeout: float = 30.0) -> None:
        """Wait until the last wave's runs have a step under way (or ``timeout``)."""
        deadline = time.monotonic() + timeout
        wave = {t for t, _ in self.wanted[3::4]}
        while time.monotonic() < deadline:
            if len({w["task"] for w in self._witnessed() if w["task"] in wave}) >= runs:
                return
            time.sleep(0.2)

    def _claims(self) -> dict[str, int]:
        """How often the workers took each run from the queue (a run that spins is taken again and again)."""
        from saber.cluster.queue import RunQueue
        from saber.db.database import open_database

        assert self.nodes is not None
        db = open_database(self.nodes.env["SABER_DATABASE_URL"], pool_size=1)
        try:
            queue = RunQueue(db, lease_seconds=6, max_running_per_user=8)
            return {t: int((queue.get(t) or {}).get("attempts") or 0) for t, _ in self.wanted}
        finally:
            db.close()

    # -- the faults ----------------------------------------------------------------------------------

    def redis_restart(self) -> None:
        self.redis.kill()
        time.sleep(2.0)
        self.redis.start()

    def pg_restart(self) -> None:
        self.pg.stop()
        time.sleep(3.0)
        self.pg.start()

    def redis_stall(self) -> None:
        self.redis.signal(signal.SIGSTOP)
        time.sleep(10.0)
        self.redis.signal(signal.SIGCONT)

    def worker_kill(self) -> None:
        assert self.nodes is not None
        lines = self._witnessed()
        ended = {w["e"] for w in lines if w["at"] == "end"}
        busiest = Counter(w["pid"] for w in lines if w["at"] == "start" and w["e"] not in ended)  # steps under way
        victim = max(self.workers, key=lambda w: busiest[w.pid])
        self.nodes.kill(victim)
        self.workers.remove(victim)
        self.workers.append(self.nodes.worker(8))

    def api_restart(self) -> None:
        assert self.nodes is not None and self.api_proc is not None
        self.nodes.kill(self.api_proc)
        self.api_proc = self.nodes.api(self.port)


def run_faults(workdir: Path, runs: int = 16, log: Callable[[str], None] = print) -> Report:
    """Run the fault test in ``workdir`` and return its report."""
    return FaultRun(workdir, runs, log).run()


def _report(wanted: list[tuple[str, str]], poller: Poller, followers: list[Follower], witness: Path,
            faults: list[tuple[str, float, float]], last_fault: float, t0: float, *, killed: set[int]) -> Report:
    report = Report(runs=len(wanted), faults=faults, total_seconds=time.monotonic() - t0)
    report.statuses = {t: poller.status.get(t, "never seen") for t, _ in wanted}
    for status in report.statuses.values():
        if status == "done":
            report.done += 1
        elif status == "failed":
            report.failed += 1
        elif status == "cancelled":
            report.cancelled += 1
        elif status.startswith("http 404") or status == "never seen":
            report.lost += 1
        else:
            report.stuck += 1
    lines = [json.loads(line) for line in witness.read_text().splitlines() if line.strip()] if witness.exists() else []
    ends: dict[tuple[str, str], list[dict[str, Any]]] = {}
    starts: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for w in lines:
        (starts if w["at"] == "start" else ends).setdefault((w["task"], w["step"]), []).append(w)
    for done in ends.values():
        if len(done) > 1:  # ended in a worker killed before its checkpoint recorded it: at-least-once
            lost_in_kill = all(w["pid"] in killed for w in done[:-1])
            report.steps_rerun_after_kill += lost_in_kill
            report.steps_ran_twice += not lost_in_kill
    report.steps_restarted = sum(1 for s in starts.values() if len(s) > 1)
    report.restarted_with_other_key = sum(1 for s in starts.values() if len(s) > 1 and len({w["key"] for w in s}) > 1)
    if poller.done_at and report.done == report.runs:
        report.seconds_to_last_done = max(0.0, max(poller.done_at.values()) - last_fault)
    report.followers_saw_done = sum(1 for f in followers if f.done)
    report.events_repeated = sum(f.repeated() for f in followers)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=16)
    parser.add_argument("--json", action="store_true", help="Print the report as JSON.")
    parser.add_argument("--keep", action="store_true", help="Keep the working folder (process logs, witness lines).")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="saber-faults-"))
    try:
        report = run_faults(workdir, runs=args.runs, log=lambda line: print(line, file=sys.stderr, flush=True))
    finally:
        if args.keep:
            print(f"kept {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        print(json.dumps(asdict(report), indent=2))
    else:
        print("\n".join(report.lines()))
        print("goal met" if report.ok() else "GOAL NOT MET")
    return 0 if report.ok() else 1


if __name__ == "__main__":
    sys.exit(main())
