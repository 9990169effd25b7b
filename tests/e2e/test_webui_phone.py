"""The page from a 360 px phone to a desktop: nothing wider than the screen, the composer and its
send button in view and usable, the task graph reachable (folded into a tab on a phone, beside
nothing it would squeeze), in Chinese and English. Each size's screenshots are kept as test
artefacts under ``$SABER_TEST_ARTIFACTS`` (else the test's temporary folder), whose path is printed."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from test_webui import THREE_BRANCH_PLAN, TOOLS

from conftest import ModelScript

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

SIZES = [(360, 740), (390, 844), (1280, 800)]
LONG_WORD = "".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(3))
"""192 characters without a break: a link or a hash in an answer must wrap, not widen the page."""
ARTEFACTS = os.environ.get("SABER_TEST_ARTIFACTS")
"""Read at import: every test runs without SABER_* variables (tests/conftest.py)."""


@pytest.fixture
def artefacts(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    folder = (Path(ARTEFACTS) if ARTEFACTS else tmp_path) / "screenshots" / request.node.name.replace("/", "_")
    folder.mkdir(parents=True, exist_ok=True)
    print(f"screenshots: {folder}")
    return folder


def no_horizontal_overflow(page: Any) -> bool:
    return bool(page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth"))


def in_view(page: Any, test_id: str) -> bool:
    """Whether the element is wholly inside the viewport (not cut off, not scrolled away)."""
    box = page.get_by_test_id(test_id).bounding_box()
    size = page.viewport_size
    return bool(box and box["x"] >= 0 and box["y"] >= 0 and box["x"] + box["width"] <= size["width"] + 0.5
                and box["y"] + box["height"] <= size["height"] + 0.5 and box["width"] > 0 and box["height"] > 0)


def within_width(page: Any, selector: str) -> bool:
    """Whether the element is visible and not cut off at either side of the screen."""
    box = page.locator(selector).bounding_box()
    return bool(box and box["width"] > 0 and box["x"] >= 0 and box["x"] + box["width"] <= page.viewport_size["width"] + 0.5)


@pytest.mark.parametrize(("width", "height"), SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_the_chat_and_its_task_graph_fit_the_screen(live: Any, browser: Any, script: ModelScript, artefacts: Path,
                                                    width: int, height: int, locale: str) -> None:
    phone = width < 700
    script.plan = THREE_BRANCH_PLAN
    script.answer = f"The Nile measures 42. See https://example.org/{LONG_WORD}."
    server = live(tools=TOOLS)
    context = browser.new_context(viewport={"width": width, "height": height}, locale=locale)
    page = context.new_page()
    page.goto(server.url)
    page.wait_for_selector("[data-testid=composer]")
    page.screenshot(path=str(artefacts / "1-empty.png"))
    assert no_horizontal_overflow(page)
    assert in_view(page, "composer") and in_view(page, "send")

    page.get_by_test_id("mode").select_option("react")
    page.get_by_test_id("composer").fill("look up rivers in two sources, measure the Nile and summarise" if locale == "en-US"
                                         else "查两个来源里的河流资料，测量尼罗河并总结")
    page.get_by_test_id("send").click()  # a tap on the button: in view, not covered
    page.wait_for_selector("[data-testid=answer]:has-text('The Nile measures 42.')", timeout=20000)
    page.wait_for_selector("[data-node-id=n4][data-status=done]", state="attached")
    toggle = page.get_by_test_id("graph-toggle").last
    expect(toggle).to_contain_text("4 steps · 3 done · 1 skipped" if locale == "en-US" else "4 个步骤 · 3 done · 1 skipped")
    page.screenshot(path=str(artefacts / "2-answer.png"))
    assert no_horizontal_overflow(page)
    assert in_view(page, "composer") and in_view(page, "send")

    if phone:  # folded under its progress line, so the answer is in sight; one tap opens it
        expect(page.locator("[data-node-id=n1]")).to_be_hidden()
        toggle.click()
    for node in ("n1", "n2", "n3", "n4"):  # the whole graph across the screen, with no sideways scrolling
        assert within_width(page, f"[data-node-id={node}]"), f"{node} is cut off at {width}x{height}"
    page.locator("[data-node-id=n3]").click()
    expect(page.locator(".node-detail").last).to_contain_text("measures 42")
    page.screenshot(path=str(artefacts / "3-graph.png"))
    assert no_horizontal_overflow(page)

    page.get_by_test_id("composer").fill("hi")
    page.get_by_test_id("send").click()
    expect(page.get_by_test_id("answer").last).to_contain_text("The Nile measures 42.")
    page.screenshot(path=str(artefacts / "4-second-answer.png"))
    assert no_horizontal_overflow(page) and in_view(page, "composer") and in_view(page, "send")
    assert not page.evaluate("window.__errors || []")
    context.close()


@pytest.mark.parametrize(("width", "height"), SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_the_knowledge_base_and_a_cited_answer_fit_the_screen(live: Any, browser: Any, script: ModelScript,
                                                             artefacts: Path, tmp_path: Path, width: int,
                                                             height: int) -> None:
    doc = tmp_path / f"otters-{LONG_WORD[:60]}.md"
    doc.write_text(f"# 海獭 facts {LONG_WORD[:80]}\n\nSea otters hold hands while they sleep. 海獭睡觉时手牵手。\n",
                   encoding="utf-8")
    script.answer = "Sea otters hold hands while sleeping [1]."
    server = live(tools=TOOLS)
    context = browser.new_context(viewport={"width": width, "height": height}, locale="zh-CN")
    page = context.new_page()
    page.goto(server.url + "/#/knowledge")
    page.get_by_test_id("file-input").set_input_files([str(doc)])
    page.wait_for_selector(f"[data-file='{doc.name}'][data-state=done]")
    page.wait_for_selector("[data-testid=documents] a:has-text('海獭 facts')")
    page.screenshot(path=str(artefacts / "1-knowledge.png"))
    assert no_horizontal_overflow(page)
    page.locator("[data-testid=documents] a:has-text('海獭 facts')").click()
    page.wait_for_selector("[data-testid=doc-viewer]:has-text('手牵手')")
    assert no_horizontal_overflow(page)

    page.goto(server.url + "/#/chat")
    page.get_by_test_id("mode").select_option("rag")
    page.get_by_test_id("composer").fill("海獭为什么睡觉时手牵手？")
    page.get_by_test_id("send").click()
    page.wait_for_selector("[data-testid=citations] .citation")
    page.locator("[data-testid=citations] summary").first.click(position={"x": 4, "y": 8})  # not on its link
    page.screenshot(path=str(artefacts / "2-cited-answer.png"))
    assert no_horizontal_overflow(page)
    assert in_view(page, "composer") and in_view(page, "send")
    context.close()
