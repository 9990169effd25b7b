"""Processes of a test cluster: ``saber serve`` API nodes and ``saber worker``s, as real subprocesses."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from saber.testing import FakeOpenAIServer

HERE = Path(__file__).parent
REDIS_URL = os.environ.get("SABER_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
ADMIN_URL = os.environ.get("SABER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
"""The machine's PostgreSQL, where the cluster tests create (and drop) their databases."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    root: Path
    env: dict[str, str]
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    count: int = 0

    def _start(self, args: list[str], name: str) -> subprocess.Popen[bytes]:
        self.count += 1
        home = self.root / f"{name}-{self.count}"
        home.mkdir(parents=True)
        env = dict(self.env, SABER_HOME=str(home))
        log = open(home / "log.txt", "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen([sys.executable, "-m", "saber.cli", *args], env=env, stdout=log, stderr=subprocess.STDOUT)
        proc.log_path = home / "log.txt"  # type: ignore[attr-defined]
        log.close()
        self.procs.append(proc)
        return proc

    def api(self) -> str:
        port = free_port()
        proc = self._start(["serve", "--port", str(port)], "api")
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise AssertionError(f"api node exited: {self.output(proc)}")
            try:
                if httpx.get(base + "/readyz", timeout=2).status_code == 200:
                    return base
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"api node not ready: {self.output(proc)}")

    def worker(self, concurrency: int = 2, *extra: str) -> subprocess.Popen[bytes]:
        proc = self._start(["worker", "--concurrency", str(concurrency), *extra], "worker")
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise AssertionError(f"worker exited: {self.output(proc)}")
            if "taking runs" in self.output(proc):
                return proc
            time.sleep(0.2)
        raise AssertionError(f"worker not ready: {self.output(proc)}")

    @staticmethod
    def output(proc: subprocess.Popen[bytes]) -> str:
        return Path(proc.log_path).read_text(encoding="utf-8", errors="replace")  # type: ignore[attr-defined]

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def cluster_env(*, pgvector_url: str, redis_url: str, prefix: str, llm_url: str, witness: Path, **settings: Any) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
    env.update({
        "SABER_DATABASE_URL": pgvector_url, "SABER_REDIS_URL": redis_url, "SABER_CLUSTER_REDIS_PREFIX": prefix,
        "SABER_LLM_BASE_URL": llm_url, "SABER_LLM_MODEL": "fake-model", "SABER_LLM_API_KEY": "k",
        "SABER_EMBEDDING_PROVIDER": "openai", "SABER_EMBEDDING_BASE_URL": llm_url, "SABER_EMBEDDING_API_KEY": "k",
        "SABER_EMBEDDING_DIM": "64", "SABER_SEARCH_BACKEND": "none", "SABER_TOOLS_MODULES": "cluster_tools",
        "SABER_TEST_WITNESS": str(witness), "PYTHONPATH": os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")]),
    })
    env.update({f"SABER_{k.upper()}": str(v) for k, v in settings.items()})
    return env


def sse(response: httpx.Response) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(id, event, data) of each event of an SSE response."""
    return sse_lines(response.iter_lines())


def sse_lines(lines: Iterator[str]) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(id, event, data) of each event in the lines of an SSE response."""
    seq, kind, data = 0, "", ""
    for line in lines:
        if line.startswith("id:"):
            seq = int(line[3:].strip())
        elif line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("data:"):
            data += line[5:].strip()
        elif line == "" and kind:
            yield seq, kind, json.loads(data) if data else {}
            seq, kind, data = 0, "", ""


def numbers(events: list[tuple[int, str, dict[str, Any]]]) -> list[int]:
    """The numbers of a run's events, without ``reconnecting`` notices: a follower whose read of
    Redis stalled (a machine under load can starve it for the stall limit) is told so, numbered
    as the last event it got, by design; the run's events must still come each once, in order."""
    return [e[0] for e in events if e[1] != "reconnecting"]


def plan_reply(body: dict[str, Any]) -> str:
    """The fake model: a planner request gets a plan of witness steps for the task named in the
    query ("job <task> of <user> steps <n> [slow] [report] [broken]"; with "report", a last step saves
    a document with write_document; with "broken", a step of its own fails); anything else gets a
    short answer."""
    messages = body.get("messages") or []
    text = " ".join(str(m.get("content") or "") for m in messages)
    if "task planner" not in text:
        return "finished"
    query = str(messages[-1].get("content") or "")
    words = query[query.rindex("job "):].split()
    task, user, steps = words[1], words[3], int(words[5])
    seconds = 3.0 if "slow" in words else 0.4
    plan = [{"id": f"n{i}", "tool": "witness", "params": {"task": task, "user": user, "step": f"n{i}", "seconds": seconds},
             "depends_on": [f"n{i - 1}"] if i > 1 else []} for i in range(1, steps + 1)]
    if "report" in words:
        plan.append({"id": f"n{steps + 1}", "tool": "write_document", "depends_on": [f"n{steps}"],
                     "params": {"title": f"report {task}", "content_md": f"# Report {task}\n\nAll {steps} steps of "
                                f"{task} for {user} finished."}})
    if "broken" in words:
        plan.append({"id": "nb", "tool": "broken_step", "params": {"task": task}, "depends_on": []})
    return json.dumps(plan)


SLOW_ANSWER = " ".join(f"{a}{b}" for a in "bcdfghjklmnp" for b in "aeiou")
"""The answer to a query with SLOWGEN: 60 words, streamed a word at a time."""


def slow_answer_reply(body: dict[str, Any]) -> Any:
    """The fake model: ``SLOW_ANSWER`` slowly for a query with SLOWGEN (which a client can hang up
    on, or a worker die in); "finished" for anything else."""
    from saber.testing.fake_openai import FakeReply

    messages = body.get("messages") or []
    if "SLOWGEN" in str(messages[-1].get("content") or "") and body.get("stream"):
        return FakeReply(text=SLOW_ANSWER, chunk_delay=0.25)
    return "finished"


def task_status(api: str, task_id: str, user: str) -> dict[str, Any]:
    """``GET /api/tasks/{id}`` once the task is no longer queued, running or recovering."""
    while True:
        detail: dict[str, Any] = httpx.get(f"{api}/api/tasks/{task_id}", params={"user_id": user}, timeout=30).json()
        if detail.get("status") not in ("queued", "running", "recovering"):
            return detail
        time.sleep(0.2)


@contextlib.contextmanager
def small_cluster(tmp_path: Path, pgvector_url: str, redis_prefix: str,
                  reply: Callable[[dict[str, Any]], Any]) -> Iterator[Cluster]:
    """A cluster (no process started yet) whose model answers every call with ``reply``; stopped after."""
    with FakeOpenAIServer([reply] * 500) as llm:
        env = cluster_env(pgvector_url=pgvector_url, redis_url=REDIS_URL, prefix=redis_prefix, llm_url=llm.base_url,
                          witness=tmp_path / "witness.jsonl", cluster_lease=3, graph_checkpoint_lease=3)
        c = Cluster(tmp_path, env)
        try:
            yield c
        finally:
            c.stop()
