"""The process around the app: SIGTERM mid-task then resume after a restart; nothing blocks the
event loop; `saber serve` refuses to expose an unauthenticated agent."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from blockbuster import blockbuster_ctx
from server_helpers import free_port, make_agent, read_sse, settings_for, wait_ready

from saber.llm.openai_compat import OpenAIChatModel
from saber.server import create_app
from saber.testing import FakeOpenAIServer

SCRIPT = Path(__file__).with_name("serve_script.py")


def start(home: Path, port: int, base_url: str, slow: str = "") -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
    env["SLOW_SECONDS"] = slow
    proc = subprocess.Popen([sys.executable, str(SCRIPT), str(home), str(port), base_url], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_ready(proc, port)
    return proc


def events_until(stream: Iterator, kind: str) -> list:  # type: ignore[type-arg]
    seen = []
    for event in stream:
        seen.append(event)
        if event.event == kind:
            return seen
    raise AssertionError(f"no {kind} event in {[e.event for e in seen]}")


def plan(seconds: float) -> str:
    return json.dumps([{"id": "n1", "tool": "slow_step", "params": {"seconds": seconds}}])


@pytest.mark.slow
def test_sigterm_lets_short_requests_finish_cancels_the_rest_and_a_restart_resumes(tmp_path: Path) -> None:
    home, port = tmp_path / "home", free_port()
    url = f"http://127.0.0.1:{port}"
    with FakeOpenAIServer([plan(60), plan(0.5), "the short one finished", "resumed after the restart"]) as llm:
        proc = start(home, port, llm.base_url)
        with httpx.Client(base_url=url, timeout=30) as long_client, httpx.Client(base_url=url, timeout=30) as short_client, \
                long_client.stream("POST", "/api/chat/stream", json={"message": "a long job", "mode": "react"}) as long_r:
            long_events = read_sse(long_r)
            task_id = events_until(long_events, "node_start")[0].data["task_id"]
            with short_client.stream("POST", "/api/chat/stream", json={"message": "a short job", "mode": "react"}) as short_r:
                short_events = read_sse(short_r)
                events_until(short_events, "node_start")
                proc.send_signal(signal.SIGTERM)
                short_done = events_until(short_events, "done")[-1]
            long_done = events_until(long_events, "done")[-1]
        assert short_done.data["interrupted"] is False and short_done.data["answer"] == "the short one finished"
        assert long_done.data["interrupted"] is True and long_done.data["task_id"] == task_id
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{url}/healthz")
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGTERM, err  # uvicorn re-raises the signal once shut down
        assert "Traceback" not in err and "cancelling 1 request(s) still running after the 2.0 s grace" in err

        proc = start(home, port, llm.base_url, slow="0.01")
        try:
            with httpx.Client(base_url=url, timeout=30) as client:
                listed = {t["task_id"]: t["status"] for t in client.get("/api/tasks").json()}
                assert listed[task_id] == "cancelled", "checkpointed as cancelled: resumable"
                with client.stream("POST", f"/api/tasks/{task_id}/resume") as r:
                    assert r.status_code == 200, r.read()
                    resumed = list(read_sse(r))
                assert resumed[-1].event == "done" and resumed[-1].data["answer"] == "resumed after the restart"
                assert [e.data["id"] for e in resumed if e.event == "node_start"] == ["n1"]
                assert client.get(f"/api/tasks/{task_id}").json()["status"] == "done"
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=30)
        llm.assert_complete()


async def test_a_request_never_blocks_the_event_loop(tmp_path: Path) -> None:
    """One pass to warm up (imports on first use, FastAPI's first look at each endpoint), then the
    same requests again with two checks that do not depend on the machine's load: blockbuster
    turns any blocking call made on the event loop's thread inside a task (a file read, a
    sleep, a SQLite query, a blocking socket) into an error, and no callback of the loop may
    spend 50 ms of its own thread's CPU time (garbage collection left out). Wall-clock checks
    failed here when 2 shared cores were busy with other test runs."""
    settings = settings_for(tmp_path / "home")
    async with FakeOpenAIServer() as llm:
        model = OpenAIChatModel("fake-model", base_url=llm.base_url, api_key="k")
        agent = await asyncio.to_thread(make_agent, settings, model)
        server = uvicorn.Server(uvicorn.Config(create_app(agent, settings), port=0, log_level="warning"))
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started:  # noqa: ASYNC110 - uvicorn has no started event
            await asyncio.sleep(0.01)
        try:
            async with httpx.AsyncClient(base_url=url, timeout=30) as client:
                llm.queue(*[_by_kind] * 6)  # a rag answer with nothing relevant asks no model: no fixed order
                await requests(client, 0)
                llm.queue(*[_by_kind] * 6)
                with blockbuster_ctx(), callbacks_over(0.05) as slow:
                    await requests(client, 1)
        finally:
            server.should_exit = True
            await serving
            sock.close()
            await agent.aclose()
            await model.aclose()
    assert slow == [], slow


@contextlib.contextmanager
def callbacks_over(limit: float) -> Iterator[list[str]]:
    """The event loop's callbacks that spent more than ``limit`` seconds of CPU time on the loop's
    thread while the block ran (time in garbage collection not counted)."""
    slow: list[str] = []
    in_gc = [0.0, 0.0]  # seconds spent collecting, start of the current collection

    def on_gc(phase: str, _info: dict[str, int]) -> None:
        if threading.current_thread() is threading.main_thread():
            if phase == "start":
                in_gc[1] = time.thread_time()
            else:
                in_gc[0] += time.thread_time() - in_gc[1]

    run = asyncio.events.Handle._run

    def timed(handle: asyncio.Handle) -> None:
        cpu, collecting = time.thread_time(), in_gc[0]
        run(handle)
        spent = time.thread_time() - cpu - (in_gc[0] - collecting)
        if spent > limit:
            slow.append(f"{handle!r}: {spent * 1000:.0f} ms of CPU")

    gc.callbacks.append(on_gc)
    asyncio.events.Handle._run = timed  # type: ignore[method-assign]
    try:
        yield slow
    finally:
        asyncio.events.Handle._run = run  # type: ignore[method-assign]
        gc.callbacks.remove(on_gc)


def _by_kind(body: dict[str, Any]) -> str:
    """The fake model's reply: the plan to a planner prompt, else an answer."""
    system = " ".join(str(m.get("content")) for m in body.get("messages", []) if m.get("role") == "system")
    if "task planner" in system:
        return json.dumps([{"id": "n1", "tool": "get_time", "params": {"timezone": "UTC"}}])
    return "It is noon." if "time" in json.dumps(body.get("messages", [])) else "Tea is a drink [1]."


async def requests(client: httpx.AsyncClient, attempt: int) -> None:
    text = f"# Tea {attempt}\n\nGreen tea is not fermented; black tea is oxidised. 绿茶不发酵。 {attempt}".encode()
    files = {"files": (f"tea{attempt}.md", text, "text/markdown")}
    assert (await client.post("/api/documents", files=files)).status_code == 200
    r = await client.post("/api/chat", json={"message": "what time is it in UTC", "mode": "react"})
    assert r.json()["answer"] == "It is noon."
    async with client.stream("POST", "/api/chat/stream", json={"message": "is green tea fermented", "mode": "rag"}) as s:
        lines = [line async for line in s.aiter_lines()]
    assert "event: done" in lines
    for path in ("/api/status", "/api/tasks", "/api/documents", "/api/memory", "/api/tools"):
        assert (await client.get(path)).status_code == 200


def run_saber(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
    env["SABER_HOME"] = os.environ["SABER_HOME"]
    return subprocess.run([sys.executable, "-m", "saber.cli", *args], env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.slow
def test_serve_refuses_a_public_address_without_keys_and_prints_new_keys() -> None:
    done = run_saber("serve", "--host", "0.0.0.0", "--port", "0")
    assert done.returncode == 2
    assert "refusing to listen on 0.0.0.0: no API keys are configured" in done.stderr
    assert "--insecure-no-auth" in done.stderr and "Traceback" not in done.stderr
    done = run_saber("serve", "--new-key", "alice")
    assert done.returncode == 0 and "sha256:" in done.stdout and "alice" in done.stdout


@pytest.mark.slow
def test_new_key_prints_lines_saber_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from saber.config import Settings
    from saber.server.auth import KeyRing, read_keys_file

    done = run_saber("serve", "--new-key", 'a b"c')
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    key = lines[0].rpartition(": ")[2]
    config = tmp_path / "saber.toml"
    config.write_text("[server.api_keys]\n" + lines[1].partition(":  ")[2] + "\n", encoding="utf-8")
    monkeypatch.setenv("SABER_CONFIG", str(config))
    assert KeyRing.from_settings(Settings.load()).user_for(key) == 'a b"c'
    assert "keys file cannot hold this user id" in lines[2], "a keys-file line would split at the space"

    done = run_saber("serve", "--new-key", "alice")
    lines = done.stdout.splitlines()
    keys_file = tmp_path / "keys"
    keys_file.write_text(lines[2].partition(":  ")[2] + "\n", encoding="utf-8")
    assert KeyRing(read_keys_file(keys_file)).user_for(lines[0].rpartition(": ")[2]) == "alice"

    done = run_saber("serve", "--new-key", " x")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == "saber: error: --new-key: user_id must not start or end with spaces: ' x'"


@pytest.mark.slow
def test_serve_says_in_one_line_why_the_agent_cannot_start() -> None:
    (Path(os.environ["SABER_HOME"]) / "saber.db").mkdir(parents=True)  # a folder where the database file goes
    done = run_saber("serve", "--port", str(free_port()))
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("saber: error:")]
    assert len(errors) == 1 and errors[0].startswith("saber: error: cannot start:"), done.stderr
    assert "unable to open database file" in errors[0]
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_serve_refuses_a_plain_key_in_the_config() -> None:
    home = Path(os.environ["SABER_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "saber.toml").write_text('[server.api_keys]\n"sk-plain-key" = "alice"\n', encoding="utf-8")
    done = run_saber("serve", "--port", str(free_port()))
    assert done.returncode == 2 and "is not a key hash" in done.stderr and "Traceback" not in done.stderr
