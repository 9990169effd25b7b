"""Tasks over HTTP: reconnect with Last-Event-ID, disconnect cancels, detach, cancel, resume, users."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable

import httpx
import pytest
from server_helpers import LiveServer, read_sse

from saber.testing import FakeOpenAIServer
from saber.tools import tool

CANCELLED: list[float] = []
QUICK = threading.Event()


@tool
async def slow_step(seconds: float) -> str:
    """Wait ``seconds`` (a test tool; at once after QUICK is set); notes when it is cancelled."""
    try:
        if not QUICK.is_set():
            await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        CANCELLED.append(time.monotonic())
        raise
    return f"waited {seconds}"


@pytest.fixture(autouse=True)
def _reset() -> None:
    CANCELLED.clear()
    QUICK.clear()


def plan(*seconds: float) -> str:
    """A chain of slow steps, each after the one before."""
    return json.dumps([{"id": f"n{i}", "tool": "slow_step", "params": {"seconds": s},
                        "depends_on": [f"n{i - 1}"] if i > 1 else []} for i, s in enumerate(seconds, 1)])


ALICE = {"Authorization": "Bearer key-alice"}
BOB = {"Authorization": "Bearer key-bob"}


def start_stream(client: httpx.Client, body: dict[str, object], headers: dict[str, str] | None = None) -> str:
    """Start a detached streamed request, read its start event, hang up; return its task id."""
    with client.stream("POST", "/api/chat/stream", json={**body, "detach": True}, headers=headers) as r:
        assert r.status_code == 200, r.read()
        first = next(read_sse(r))
        assert first.event == "start"
        return str(first.data["task_id"])


WAIT_SECONDS = 60.0
"""How long a wait for a task's state may take: bounded by a deadline, not by a number of polls
(on a loaded machine, 300 polls of 20 ms ran out before a 0.6 s task had finished)."""


def wait_status(client: httpx.Client, task_id: str, wanted: str, headers: dict[str, str] | None = None) -> dict[str, object]:
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        body = client.get(f"/api/tasks/{task_id}", headers=headers).json()
        if body["status"] == wanted:
            return body  # type: ignore[no-any-return]
        if time.monotonic() > deadline:
            raise AssertionError(f"task {task_id} never became {wanted}: {body}")
        time.sleep(0.02)


def wait_for(condition: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"never saw {what}")
        time.sleep(0.02)


def test_reconnect_with_last_event_id_loses_and_repeats_nothing(serve: Callable[..., LiveServer],
                                                               fake_llm: FakeOpenAIServer) -> None:
    fake_llm.queue(plan(0.2, 0.2, 0.2), "three steps done")
    live = serve(tools=[slow_step], builtin=False)
    with httpx.Client(base_url=live.url, timeout=30) as client:
        first: list[int] = []
        with client.stream("POST", "/api/chat/stream", json={"message": "run three steps", "mode": "react",
                                                             "detach": True}) as r:
            task_id = r.headers["x-task-id"]
            for event in read_sse(r):
                first.append(event.id or 0)
                if event.event == "node_start":
                    break  # the connection drops mid-task
        with client.stream("GET", f"/api/tasks/{task_id}/events", headers={"Last-Event-ID": str(first[-1])}) as r:
            rest = [e for e in read_sse(r)]
            assert r.headers["x-task-id"] == task_id and r.headers["cache-control"] == "no-store"  # no proxy replays it
        assert rest[-1].event == "done" and rest[-1].data["answer"] == "three steps done"
        seen = first + [e.id or 0 for e in rest]
        with client.stream("GET", f"/api/tasks/{task_id}/events") as r:
            replay = [e for e in read_sse(r)]
        assert seen == [e.id for e in replay] == list(range(1, len(replay) + 1)), "no event lost or repeated"
        assert [e.event for e in replay][:2] == ["start", "route"]


def test_disconnect_cancels_the_running_task(serve: Callable[..., LiveServer], fake_llm: FakeOpenAIServer) -> None:
    fake_llm.queue(plan(30))
    live = serve(tools=[slow_step], builtin=False)
    with httpx.Client(base_url=live.url, timeout=30) as client:
        with client.stream("POST", "/api/chat/stream", json={"message": "wait long", "mode": "react"}) as r:
            task_id = r.headers["x-task-id"]
            for event in read_sse(r):
                if event.event == "node_start":
                    break
            hung_up = time.monotonic()
        detail = wait_status(client, task_id, "cancelled")
        # cancelled on the hang-up, not left to run its 30 s (how fast is the machine's load, not the test's)
        assert CANCELLED and CANCELLED[0] - hung_up < 15.0, "the running step was cancelled"
        assert detail["nodes"][0]["status"] == "cancelled"  # type: ignore[index]
        with client.stream("GET", f"/api/tasks/{task_id}/events") as r:
            done = [e for e in read_sse(r)][-1]
        assert done.event == "done" and done.data["interrupted"] is True


def test_detached_task_keeps_running_and_can_be_followed(serve: Callable[..., LiveServer],
                                                         fake_llm: FakeOpenAIServer) -> None:
    fake_llm.queue(plan(0.3), "finished while nobody watched")
    live = serve(tools=[slow_step], builtin=False)
    with httpx.Client(base_url=live.url, timeout=30) as client:
        task_id = start_stream(client, {"message": "run one step", "mode": "react"})
        with client.stream("GET", f"/api/tasks/{task_id}/events") as r:
            events = [e for e in read_sse(r)]
        assert events[-1].data["answer"] == "finished while nobody watched" and not events[-1].data["interrupted"]
        assert not CANCELLED
        assert wait_status(client, task_id, "done")["answer"] == "finished while nobody watched"


def test_a_follower_that_hangs_up_does_not_cancel_the_task(serve: Callable[..., LiveServer],
                                                           fake_llm: FakeOpenAIServer) -> None:
    """Only the connection that started a task cancels it by hanging up: someone following its
    events (a second tab, a reconnect) may leave at any time."""
    fake_llm.queue(plan(1.0), "finished after the follower left")
    live = serve(tools=[slow_step], builtin=False)
    with httpx.Client(base_url=live.url, timeout=30) as owner, httpx.Client(base_url=live.url, timeout=30) as follower, \
            owner.stream("POST", "/api/chat/stream", json={"message": "wait a second", "mode": "react"}) as r:
        task_id = r.headers["x-task-id"]
        events = read_sse(r)
        with follower.stream("GET", f"/api/tasks/{task_id}/events") as followed:
            for event in read_sse(followed):
                if event.event == "node_start":
                    break  # the follower hangs up mid-step
        done = [e for e in events][-1]
    assert done.event == "done" and done.data["interrupted"] is False
    assert done.data["answer"] == "finished after the follower left" and not CANCELLED


def test_cancel_then_resume(serve: Callable[..., LiveServer], fake_llm: FakeOpenAIServer) -> None:
    fake_llm.queue(plan(0.01, 30), "resumed and finished")
    live = serve(tools=[slow_step], builtin=False)
    with httpx.Client(base_url=live.url, timeout=30) as client:
        task_id = start_stream(client, {"message": "two steps", "mode": "react"})
        def first_step_done() -> bool:
            nodes = client.get(f"/api/tasks/{task_id}").json()["nodes"]
            return len(nodes) == 2 and nodes[0]["status"] == "done"

        wait_for(first_step_done, "the first step done")
        r = client.post(f"/api/tasks/{task_id}/cancel")
        assert r.json() == {"task_id": task_id, "cancelled": True}
        detail = wait_status(client, task_id, "cancelled")
        assert [n["status"] for n in detail["nodes"]] == ["done", "cancelled"]  # type: ignore[union-attr]
        assert client.post(f"/api/tasks/{task_id}/cancel").json()["cancelled"] is False
        QUICK.set()  # the second step is quick this time
        with client.stream("POST", f"/api/tasks/{task_id}/resume") as r:
            assert r.status_code == 200, r.read()
            events = [e for e in read_sse(r)]
        assert [e.data["id"] for e in events if e.event == "node_start"] == ["n2"], "the finished step is not rerun"
        assert events[-1].event == "done"
        assert wait_status(client, task_id, "done")


def test_two_users_never_see_or_cancel_each_others_tasks(serve: Callable[..., LiveServer],
                                                         fake_llm: FakeOpenAIServer) -> None:
    fake_llm.queue(plan(30))
    live = serve(tools=[slow_step], builtin=False, keys=True)
    with httpx.Client(base_url=live.url, timeout=30) as client:
        task_id = start_stream(client, {"message": "alice's secret errand", "mode": "react"}, ALICE)
        for method, path in (("GET", f"/api/tasks/{task_id}"), ("POST", f"/api/tasks/{task_id}/cancel"),
                             ("GET", f"/api/tasks/{task_id}/events"), ("POST", f"/api/tasks/{task_id}/resume")):
            r = client.request(method, path, headers=BOB)
            assert r.status_code == 404, (path, r.text)
            assert "secret" not in r.text and r.json()["error"]["code"] == "not_found"
        assert client.get("/api/tasks", headers=BOB).json() == []
        mine = client.get("/api/tasks", headers=ALICE).json()
        assert [t["task_id"] for t in mine] == [task_id] and mine[0]["status"] == "running"
        assert client.post(f"/api/tasks/{task_id}/cancel", headers=ALICE).json()["cancelled"] is True
        wait_status(client, task_id, "cancelled", ALICE)


def test_a_user_at_the_limit_gets_429_others_do_not(serve: Callable[..., LiveServer], fake_llm: FakeOpenAIServer) -> None:
    fake_llm.queue(plan(30))
    live = serve(tools=[slow_step], builtin=False, keys=True, server={"max_running_per_user": 1})
    with httpx.Client(base_url=live.url, timeout=30) as client:
        task_id = start_stream(client, {"message": "hold the slot", "mode": "react"}, ALICE)
        r = client.post("/api/chat", json={"message": "现在几点"}, headers=ALICE)
        assert r.status_code == 429 and r.headers["retry-after"] == "1"
        assert r.json()["error"]["code"] == "too_many_requests" and r.json()["request_id"]
        wait_for(lambda: fake_llm.chat_requests, "alice's planner call")  # else bob's request may take her plan
        # bob's request gets scripted replies (an empty script answers errors, retried with backoff: slow)
        fake_llm.queue(*["It is noon in UTC."] * 4)
        assert client.post("/api/chat", json={"message": "现在几点 in UTC", "mode": "tool"}, headers=BOB).status_code == 200
        client.post(f"/api/tasks/{task_id}/cancel", headers=ALICE)
        wait_status(client, task_id, "cancelled", ALICE)
        fake_llm.queue("again")
        assert client.post("/api/chat", json={"message": "hello", "mode": "chat"}, headers=ALICE).status_code == 200


def test_a_task_id_in_use_is_refused(serve: Callable[..., LiveServer], fake_llm: FakeOpenAIServer) -> None:
    fake_llm.queue("first", "second")
    live = serve()
    with httpx.Client(base_url=live.url, timeout=30) as client:
        for mode in ("react", "chat"):
            task_id = f"t-{mode}"
            assert client.post("/api/chat", json={"message": "hi", "task_id": task_id, "mode": mode}).status_code == 200
            r = client.post("/api/chat", json={"message": "hi", "task_id": task_id, "mode": mode})
            assert r.status_code == 409 and "already exists" in r.json()["error"]["message"]
            events = client.get(f"/api/tasks/{task_id}/events").text
            assert events.count("event: start") == 1, "the first run's log is intact"


def test_a_plain_chat_whose_client_hangs_up_is_cancelled(serve: Callable[..., LiveServer],
                                                        fake_llm: FakeOpenAIServer) -> None:
    fake_llm.queue(plan(30))
    live = serve(tools=[slow_step], builtin=False)
    with httpx.Client(base_url=live.url, timeout=30) as client:
        with pytest.raises(httpx.ReadTimeout):
            client.post("/api/chat", json={"message": "wait long", "mode": "react", "task_id": "t-gone"}, timeout=1.0)
        wait_status(client, "t-gone", "cancelled")
        assert CANCELLED


def test_keep_alive_comments_while_nothing_happens(serve: Callable[..., LiveServer], fake_llm: FakeOpenAIServer) -> None:
    fake_llm.queue(plan(1.0), "done waiting")
    live = serve(tools=[slow_step], builtin=False)
    live.app.state.ping_seconds = 0.2
    with httpx.Client(base_url=live.url, timeout=30) as client, \
            client.stream("POST", "/api/chat/stream", json={"message": "wait a second", "mode": "react"}) as r:
        lines = list(r.iter_lines())
    pings = [i for i, line in enumerate(lines) if line.startswith(": ping")]
    assert len(pings) >= 2, lines
    # A slow planner (a loaded machine) may bring a ping before the step too; the step's second is silence
    started, ended = lines.index("event: node_start"), lines.index("event: node_done")
    assert any(started < i < ended for i in pings), f"pings fill the silence while the step runs: {lines}"


@pytest.mark.parametrize(("message", "title"), [("Run **one** [step](https://example.org)", "Run one step"),
                                                ("运行**一步**", "运行一步")])
def test_the_task_list_titles_a_task_by_its_plain_text(serve: Callable[..., LiveServer], fake_llm: FakeOpenAIServer,
                                                       message: str, title: str) -> None:
    """Issue #33 item 4: the list shows "Run one step", not the Markdown; the query stays as written."""
    fake_llm.queue(plan(0.01), "done")
    live = serve(tools=[slow_step], builtin=False)
    with httpx.Client(base_url=live.url, timeout=30) as client:
        task_id = start_stream(client, {"message": message, "mode": "react"})
        wait_status(client, task_id, "done")
        (listed,) = [t for t in client.get("/api/tasks").json() if t["task_id"] == task_id]
        assert (listed["title"], listed["query"]) == (title, message)
        assert client.get(f"/api/tasks/{task_id}").json()["title"] == title
