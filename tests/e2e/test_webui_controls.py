"""The page's controls say what they do: the knowledge-base box allows the knowledge base (the router
still decides), an upload says what the server did with the file, conversations can be started and
opened at phone width, a new conversation's title follows its first question, and a page load
leaves the console clean."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from conftest import ModelScript, screenshot, send

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

OTTERS = "# Otter facts\n\nSea otters hold hands while they sleep so they do not drift apart.\n"


def chat_bodies(page: Any) -> list[dict[str, Any]]:
    bodies: list[dict[str, Any]] = []
    page.on("request", lambda r: r.url.endswith("/api/chat/stream") and bodies.append(r.post_data_json))
    return bodies


def test_with_documents_and_the_box_ticked_a_time_question_goes_to_the_tool_and_unticked_never_to_rag(
        live: Any, page: Any, script: ModelScript) -> None:
    server = live()
    httpx.post(server.url + "/api/documents", files={"files": ("otters.md", OTTERS.encode(), "text/markdown")},
               timeout=30).raise_for_status()
    bodies = chat_bodies(page)
    page.goto(server.url)
    box = page.get_by_test_id("use-rag")
    expect(box).to_be_checked()

    send(page, "What time is it in Tokyo?")
    route = page.get_by_test_id("route").last
    expect(route.locator(".badge")).to_have_text("tool")
    expect(route).to_contain_text("keywords:tool(time)")
    expect(page.get_by_test_id("send")).to_be_enabled()
    assert "use_rag" not in bodies[0]  # ticked: allowed, the router decides
    label = page.locator("label[for=use-rag]")
    expect(label).to_have_text(re.compile("Allow knowledge base"))
    expect(label).to_have_attribute("title", re.compile(r"Unticked: it is never used.*Mode to rag"))

    send(page, "tell me about sea otters sleeping in the knowledge base")  # rag when allowed ...
    expect(page.get_by_test_id("route").last.locator(".badge")).to_have_text("rag")
    expect(page.get_by_test_id("send")).to_be_enabled()

    box.uncheck()  # ... never when not
    send(page, "tell me about sea otters sleeping in the knowledge base")
    expect(page.get_by_test_id("route").last.locator(".badge")).to_have_text("chat")
    assert bodies[2]["use_rag"] is False
    assert not page.errors


def test_an_upload_says_what_the_server_did_added_unchanged_or_a_new_version(
        live: Any, page: Any, script: ModelScript, tmp_path: Path) -> None:
    server = live()
    doc = tmp_path / "otters.md"
    doc.write_text(OTTERS, encoding="utf-8")
    page.goto(server.url + "/#/knowledge")
    rows = page.locator("[data-file='otters.md']")
    page.get_by_test_id("file-input").set_input_files([str(doc)])
    expect(rows.nth(0).locator(".status")).to_have_text("added")
    expect(rows.nth(0)).to_have_attribute("data-status", "added")
    page.get_by_test_id("file-input").set_input_files([str(doc)])  # the same file again
    expect(rows.nth(1).locator(".status")).to_have_text("unchanged: already in the knowledge base")
    expect(rows.nth(1)).to_have_attribute("data-status", "unchanged")
    expect(page.get_by_test_id("documents").locator("tr[data-document-id]")).to_have_count(1)
    screenshot(page, "knowledge-unchanged.png")
    page.set_viewport_size({"width": 390, "height": 760})
    screenshot(page, "knowledge-unchanged-phone.png")
    page.get_by_test_id("lang").click()  # the page is drawn again, its upload list empty
    expect(page.get_by_test_id("dropzone")).to_have_text("把文件拖到这里，或点击选择")
    page.get_by_test_id("file-input").set_input_files([str(doc)])
    expect(rows.nth(0).locator(".status")).to_have_text("未变化：知识库里已有")

    doc.write_text(OTTERS + "\nThe otters were moved to the east pond in May.\n", encoding="utf-8")  # changed
    page.get_by_test_id("lang").click()
    expect(page.get_by_test_id("dropzone")).to_have_text("Drop files here or choose them")
    page.get_by_test_id("file-input").set_input_files([str(doc)])
    expect(rows.nth(0)).to_have_attribute("data-status", "updated")
    expect(rows.nth(0).locator(".status")).to_have_text("updated: new version")
    assert not page.errors


def test_at_phone_width_a_new_chat_is_started_and_a_past_one_opened_from_the_compact_bar(
        live: Any, browser: Any, script: ModelScript) -> None:
    server = live()
    context = browser.new_context(viewport={"width": 390, "height": 760}, locale="en-US")
    page = context.new_page()
    page.goto(server.url)
    menu = page.get_by_test_id("conversation-menu")
    expect(page.locator("nav.conversations")).to_be_hidden()
    expect(menu).to_be_visible()
    send(page, "first question about rivers")
    expect(page.get_by_test_id("answer").last).to_contain_text("Hello from the fake model.")
    expect(menu.locator("option:checked")).to_have_text("first question about rivers")

    page.get_by_test_id("new-chat-compact").click()
    expect(page.locator(".message")).to_have_count(0)
    expect(menu.locator("option")).to_have_count(2)
    expect(menu.locator("option:checked")).to_have_text("New chat")
    send(page, "second question about lakes")
    expect(page.get_by_test_id("answer").last).to_contain_text("Hello from the fake model.")
    screenshot(page, "chat-phone-conversations.png")

    menu.select_option(label="first question about rivers")
    expect(page.locator(".message.user")).to_have_text(["first question about rivers"])
    expect(menu.locator("option:checked")).to_have_text("first question about rivers")
    assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
    context.close()


def test_a_new_conversations_sidebar_title_is_its_first_question_as_soon_as_it_is_sent(
        live: Any, page: Any, script: ModelScript) -> None:
    server = live()
    page.goto(server.url)
    expect(page.locator("nav.conversations .conv.active")).to_have_text("New chat")
    send(page, "how tall is the tallest crane")
    expect(page.locator("nav.conversations .conv.active")).to_have_text("how tall is the tallest crane")
    screenshot(page, "chat-sidebar.png")
    expect(page.get_by_test_id("answer").last).to_contain_text("Hello from the fake model.")
    page.get_by_test_id("new-chat").click()
    expect(page.locator("nav.conversations .conv")).to_have_text(["New chat", "how tall is the tallest crane"])


def test_a_conversations_title_is_the_plain_text_of_its_first_question(
        live: Any, page: Any, script: ModelScript) -> None:
    """Markdown in the question ("**Oslo**", a link, `code`) is not shown raw in the sidebar; a long
    question is cut with an ellipsis (issue 33, Chinese and English)."""
    server = live()
    page.goto(server.url)
    send(page, "Research **Oslo** and [write](http://x.example) a `report`")
    expect(page.locator("nav.conversations .conv.active")).to_have_text("Research Oslo and write a report")
    expect(page.get_by_test_id("answer").last).to_contain_text("Hello from the fake model.")
    page.get_by_test_id("new-chat").click()
    send(page, "研究一下 **霍巴特** 的天气，" + "再写一份很长的报告" * 6)
    expect(page.locator("nav.conversations .conv.active")).to_have_text(
        "研究一下 霍巴特 的天气，" + ("再写一份很长的报告" * 6)[:27] + "…")


def test_the_page_loads_with_a_clean_console(live: Any, page: Any, script: ModelScript) -> None:
    server = live()
    failed: list[str] = []
    page.on("response", lambda r: r.status >= 400 and failed.append(f"{r.status} {r.url}"))
    page.goto(server.url, wait_until="networkidle")
    expect(page.get_by_test_id("composer")).to_be_visible()
    page.goto(server.url + "/#/knowledge", wait_until="networkidle")
    expect(page.get_by_test_id("dropzone")).to_be_visible()
    assert failed == []  # no /favicon.ico 404: the icon is in the page
    assert page.console_errors == [] and page.errors == []
