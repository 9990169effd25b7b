"""Issue 28, item 6: a password or API key written in a query (or returned by a tool) is in nothing
the server stores or serves — the task record, its checkpoint rows, its event log, the history,
the memory route, the log output — while the live run still hands it to the tool that needs it."""

from __future__ import annotations

import io
import json
import logging
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from server_helpers import LiveServer

from saber.testing import FakeOpenAIServer
from saber.tools import ToolError, tool

PASSWORD = "hunter2-XYZ"
API_KEY = "sk-live-abc123def456ghi789jkl"
SEEN: list[dict[str, str]] = []


@tool
def sign_in(username: str, password: str, api_key: str) -> dict[str, str]:
    """Sign in to a service (a test tool): records what it was given, echoes the credentials back."""
    SEEN.append({"password": password, "api_key": api_key})
    return {"user": username, "password": password, "session": f"signed in with api key {api_key}"}


@tool
def check_login(password: str) -> str:
    """Check a password (a test tool): refuses it, repeating it in its error."""
    raise ToolError(f"login refused: the password {password} is wrong")


@pytest.fixture
def log_output() -> Iterator[io.StringIO]:
    """Every log record of the process, at every level, as text."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    SEEN.clear()
    yield out
    root.removeHandler(handler)
    root.setLevel(level)


def _plan(password: str, api_key: str) -> str:
    return json.dumps([{"id": "n1", "tool": "sign_in",
                        "params": {"username": "alice", "password": password, "api_key": api_key}},
                       {"id": "n2", "tool": "check_login", "params": {"password": password}}])


def _spans_text(spans: Any) -> str:
    return "\n".join(f"{s.name} {dict(s.attributes or {})} {s.status.description} {[e.attributes for e in s.events]}"
                     for s in spans.get_finished_spans())


def _stored_text(db: str) -> str:
    """Every text value of every table of the server's SQLite file."""
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return "\n".join(repr(row) for t in tables for row in conn.execute(f'SELECT * FROM "{t}"'))


@pytest.mark.parametrize("query", [
    f"sign me in: my password is {PASSWORD} and api key {API_KEY}",
    f"帮我登录，密码是 {PASSWORD}，密钥：{API_KEY}",
    f"帮我登录 密码：{PASSWORD} api_key={API_KEY}",
])
def test_a_secret_in_a_query_is_in_nothing_stored_or_served(
        query: str, serve: Callable[..., LiveServer], fake_llm: FakeOpenAIServer, log_output: io.StringIO,
        otel_spans: Any) -> None:
    fake_llm.queue(_plan(PASSWORD, API_KEY), "You are signed in.")
    live = serve(tools=[sign_in, check_login], builtin=False)
    with httpx.Client(base_url=live.url, timeout=30) as client:
        answer = client.post("/api/chat", json={"message": query, "mode": "react", "user_id": "alice"})
        assert answer.status_code == 200, answer.text
        task_id = answer.json()["task_id"]
        served = [answer.text]
        served.append(client.get(f"/api/tasks/{task_id}", params={"user_id": "alice"}).text)
        served.append(client.get("/api/tasks", params={"user_id": "alice"}).text)
        served.append(client.get(f"/api/tasks/{task_id}/events", params={"user_id": "alice"}).text)
        served.append(client.get("/api/memory", params={"user_id": "alice"}).text)
    detail = json.loads(served[1])
    assert detail["nodes"][0]["status"] == "done"
    assert SEEN == [{"password": PASSWORD, "api_key": API_KEY}]  # the live run used the secret
    stored = _stored_text(str(live.settings.sqlite_path))
    assert "sign_in" in stored, "the checkpoint was written"
    assert detail["nodes"][1]["status"] == "failed" and "login refused" in detail["nodes"][1]["error"]
    everything = {"task": served[1], "task list": served[2], "event log": served[3], "memory route": served[4],
                  "chat answer": served[0], "database": stored, "logs": log_output.getvalue(),
                  "traces": _spans_text(otel_spans)}
    assert "login refused" in everything["traces"]
    leaks = [where for where, text in everything.items() if PASSWORD in text or "abc123def456" in text]
    assert leaks == []
    assert "[redacted]" in served[1] and "[redacted]" in stored


def test_a_word_about_passwords_is_kept_as_written(serve: Callable[..., LiveServer], fake_llm: FakeOpenAIServer) -> None:
    fake_llm.queue("Use twelve characters.")
    live = serve(builtin=False)
    query = "what does our password policy say about length? 密码策略是什么"
    with httpx.Client(base_url=live.url, timeout=30) as client:
        answer = client.post("/api/chat", json={"message": query, "mode": "chat", "user_id": "alice"})
        assert answer.status_code == 200, answer.text
        task = client.get(f"/api/tasks/{answer.json()['task_id']}", params={"user_id": "alice"}).json()
        history = client.get("/api/memory", params={"user_id": "alice"}).json()["history"]
    assert task["query"] == query
    assert history[0]["content"] == query
