"""A chat stream that ends before its ``done`` event (a proxy drops the connection, the server goes
away, a stream closed early) is not a finished answer: the page follows the task again from the
last event it received, and when it cannot, keeps what arrived and says the answer may be incomplete."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from playwright.sync_api import Route, expect

from conftest import ModelScript, screenshot, send, wait_long, wait_until
from saber.testing.fake_openai import FakeReply

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

WORDS = [f"word{i} " for i in range(16)]
LONG_ANSWER = "".join(WORDS) + "**the end**"
SHOWN = "".join(WORDS) + "the end"  # as the page renders it


def follow_ups(page: Any) -> list[str | None]:
    """The Last-Event-ID of each request the page makes to follow a task's events again."""
    seen: list[str | None] = []
    page.on("request", lambda r: "/events" in r.url and seen.append(r.headers.get("last-event-id")))
    return seen


def test_a_dropped_stream_is_followed_again_from_its_last_event_and_the_answer_completes_once(
        live: Any, page: Any, script: ModelScript, proxy: Any) -> None:
    script.answer = FakeReply(text=LONG_ANSWER, chunk_delay=0.15)
    front = proxy(live().url)
    follows = follow_ups(page)
    page.goto(front.url)
    send(page, "say something long")
    answer = page.get_by_test_id("answer").last
    expect(answer).to_contain_text("word3")
    front.cut()  # the proxy drops every connection mid-stream
    expect(answer).to_have_text(SHOWN, timeout=30_000)  # all of it, nothing twice
    assert follows and follows[0] is not None and int(follows[0]) > 1, follows
    message = page.locator(".message.assistant").last
    expect(message).to_have_attribute("data-connection", "")
    expect(page.get_by_test_id("connection").last).to_be_hidden()
    expect(page.get_by_test_id("send")).to_be_enabled()
    assert not page.errors


def test_when_the_server_is_gone_the_streamed_text_stays_and_the_answer_says_it_may_be_incomplete(
        live: Any, page: Any, script: ModelScript, proxy: Any) -> None:
    script.answer = FakeReply(text=LONG_ANSWER, chunk_delay=0.15)
    front = proxy(live().url)
    page.goto(front.url)
    send(page, "say something long")
    answer = page.get_by_test_id("answer").last
    expect(answer).to_contain_text("word3")
    front.refusing = True  # the server is away: every new connection fails
    front.cut()
    connection = page.get_by_test_id("connection").last
    expect(connection).to_have_text("Connection dropped — reconnecting…")  # a few times, pausing longer each time
    expect(connection).to_have_text("Connection lost — the answer may be incomplete.Reconnect", timeout=30_000)
    message = page.locator(".message.assistant").last
    expect(message).to_have_attribute("data-connection", "lost")
    expect(answer).to_contain_text("word0 word1 word2 word3")  # what arrived is kept
    assert "the end" not in answer.inner_text()
    assert page.locator(".error-line").count() == 0  # not a red error, and not "network error" alone
    expect(page.get_by_test_id("stop")).to_be_hidden()
    expect(page.get_by_test_id("send")).to_be_enabled()
    screenshot(page, "chat-connection-lost.png")
    page.set_viewport_size({"width": 390, "height": 760})
    screenshot(page, "chat-connection-lost-phone.png")
    page.set_viewport_size({"width": 1280, "height": 860})

    front.refusing = False  # back: the page, reloaded, still says so, and Reconnect finishes the answer
    page.reload()
    expect(page.get_by_test_id("connection").last).to_contain_text("the answer may be incomplete")
    expect(page.get_by_test_id("answer").last).to_contain_text("word3")
    page.get_by_test_id("reconnect").click()
    expect(page.get_by_test_id("answer").last).to_have_text(SHOWN, timeout=30_000)
    expect(page.locator(".message.assistant").last).to_have_attribute("data-connection", "")
    assert not page.errors


def test_a_stream_closed_cleanly_before_done_is_not_shown_as_finished(live: Any, page: Any, script: ModelScript) -> None:
    script.answer = FakeReply(text=LONG_ANSWER, chunk_delay=0.1)
    server = live()
    kept_ids: list[str] = []

    def first_events_only(route: Route) -> None:
        """The chat request reaches the server, but the page gets its first events and a clean end."""
        events: list[str] = []
        lines: list[str] = []
        tokens = 0
        with httpx.stream("POST", server.url + "/api/chat/stream", json=route.request.post_data_json,
                          timeout=30) as response:
            for line in response.iter_lines():
                if line:
                    lines.append(line)
                    continue
                if not lines:
                    continue
                events.append("\n".join(lines) + "\n\n")
                kept_ids.extend(x.removeprefix("id:").strip() for x in lines if x.startswith("id:"))
                tokens += any(x.strip() == "event: token" for x in lines)
                lines = []
                if tokens == 3:
                    break
        route.fulfill(status=200, headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"},
                      body="".join(events))

    page.route("**/api/chat/stream", first_events_only)
    follows = follow_ups(page)
    page.goto(server.url)
    send(page, "say something long")
    answer = page.get_by_test_id("answer").last
    expect(answer).to_have_text(SHOWN, timeout=30_000)
    assert follows[0] == kept_ids[-1], (follows, kept_ids)  # from the last event the page received
    assert not page.errors


def test_leaving_the_page_cancels_the_task_it_was_following(live: Any, page: Any, script: ModelScript) -> None:
    script.plan = json.dumps([{"id": "n1", "type": "tool", "tool": "wait_long", "params": {"seconds": 60}, "depends_on": []}])
    server = live(tools=[wait_long], graph={"step_timeout": 120.0})
    page.goto(server.url)
    page.get_by_test_id("mode").select_option("react")
    send(page, "wait for a minute please")
    page.wait_for_selector("[data-node-id=n1][data-status=running]")
    [task] = httpx.get(server.url + "/api/tasks").json()
    assert task["status"] == "running"
    page.goto("about:blank")  # the task was detached from the stream: the page cancels it as it goes
    wait_until(lambda: httpx.get(server.url + f"/api/tasks/{task['task_id']}").json()["status"] != "running")
    with httpx.stream("GET", server.url + f"/api/tasks/{task['task_id']}/events", timeout=30) as events:
        lines = [line for line in events.iter_lines() if line.startswith("data:")]
    assert json.loads(lines[-1].removeprefix("data:"))["interrupted"] is True
