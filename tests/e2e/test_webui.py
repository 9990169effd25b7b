"""The web page as a person uses it: chat with streamed tokens, the live task graph with a race,
stop, upload and cite, vectors filling after an upload (or failing, and why), sign-in, Chinese
text, and untrusted Markdown that must not run."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Route, expect

from conftest import ModelScript, screenshot, send, wait_long, wait_until
from saber.testing.fake_openai import FakeReply
from saber.tools import tool

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


@tool
async def fast_source(query: str) -> str:
    """A fast source of facts.

    Args:
        query: What to look up.
    """
    await asyncio.sleep(0.2)
    return f"fast facts about {query}"


@tool
async def slow_source(query: str) -> str:
    """A slow source of the same facts.

    Args:
        query: What to look up.
    """
    await asyncio.sleep(5)
    return f"slow facts about {query}"


@tool
async def measure(what: str) -> str:
    """Measure something.

    Args:
        what: The thing to measure.
    """
    await asyncio.sleep(0.6)
    return f"{what} measures 42"


@tool
async def summarise(text: str) -> str:
    """Summarise a text.

    Args:
        text: The text.
    """
    await asyncio.sleep(0.2)
    return f"summary: {text[:60]}"


TOOLS = [fast_source, slow_source, measure, summarise, wait_long]

THREE_BRANCH_PLAN = json.dumps([
    {"id": "n1", "type": "tool", "tool": "fast_source", "params": {"query": "rivers"}, "depends_on": [], "race_group": "facts"},
    {"id": "n2", "type": "tool", "tool": "slow_source", "params": {"query": "rivers"}, "depends_on": [], "race_group": "facts"},
    {"id": "n3", "type": "tool", "tool": "measure", "params": {"what": "the Nile"}, "depends_on": [], "race_group": None},
    {"id": "n4", "type": "tool", "tool": "summarise", "params": {"text": "$n3"}, "depends_on": ["n3"], "race_group": None},
])


def test_tokens_stream_into_the_answer_before_it_is_finished(live: Any, page: Any, script: ModelScript) -> None:
    words = [f"word{i} " for i in range(12)]
    script.answer = FakeReply(text="".join(words) + "**the end**", chunk_delay=0.15)
    server = live(tools=TOOLS)
    page.goto(server.url)
    send(page, "say something long")
    answer = page.get_by_test_id("answer").last
    wait_until(lambda: "word1" in answer.inner_text())
    partial = answer.inner_text()
    assert "the end" not in partial, "the whole answer arrived at once: tokens were not streamed"
    page.wait_for_selector("[data-testid=answer] strong:has-text('the end')")
    assert page.locator("[data-testid=route] .badge").last.inner_text() == "chat"
    assert not page.errors


def ask_three_branches(live: Any, page: Any, script: ModelScript, plan: Any) -> None:
    script.plan = plan
    script.answer = "The Nile measures 42."
    server = live(tools=TOOLS)
    page.goto(server.url)
    page.get_by_test_id("mode").select_option("react")
    send(page, "look up rivers in two sources, measure the Nile and summarise")


def test_a_three_branch_plan_with_a_race_is_drawn_and_every_node_reaches_its_final_state(live: Any, page: Any,
                                                                                         script: ModelScript) -> None:
    ask_three_branches(live, page, script, THREE_BRANCH_PLAN)
    page.wait_for_selector("[data-node-id=n4]")
    for node in ("n1", "n2", "n3", "n4"):
        assert page.locator(f"[data-node-id={node}]").count() == 1
    assert page.locator("path.edge[data-from=n3][data-to=n4]").count() == 1
    running = page.wait_for_selector("[data-node-id=n3][data-status=running]")
    assert running is not None
    page.wait_for_selector("[data-testid=answer]:has-text('The Nile measures 42.')", timeout=20000)
    wait_until(lambda: page.locator("[data-node-id=n4]").get_attribute("data-status") == "done")
    statuses = {n: page.locator(f"[data-node-id={n}]").get_attribute("data-status") for n in ("n1", "n2", "n3", "n4")}
    assert statuses["n1"] == "done" and statuses["n3"] == "done" and statuses["n4"] == "done"
    assert statuses["n2"] in ("skipped", "cancelled"), statuses
    group = page.locator("[data-race-group=facts]")
    assert group.count() == 1
    assert group.get_attribute("data-winner") == "n1"
    assert page.locator("[data-node-id=n1][data-winner=true]").count() == 1
    page.locator("[data-node-id=n3]").click()
    detail = page.locator(".node-detail")
    assert "the Nile" in detail.inner_text()
    wait_until(lambda: "measures 42" in detail.inner_text())
    screenshot(page, "chat-graph.png")
    assert not page.errors


def test_a_streamed_plan_is_drawn_node_by_node_while_the_planner_writes_it(live: Any, page: Any,
                                                                           script: ModelScript) -> None:
    ask_three_branches(live, page, script, FakeReply(text=THREE_BRANCH_PLAN, chunk_delay=0.08))  # ~7 s of planning
    page.wait_for_selector("[data-node-id=n1]")
    assert page.locator("[data-node-id=n4]").count() == 0, "the first node is drawn before the last is written"
    page.wait_for_selector("[data-node-id=n1][data-status=done]")
    assert page.locator("[data-node-id=n4]").count() == 0, "it ran before the plan was complete"
    page.wait_for_selector("[data-testid=answer]:has-text('The Nile measures 42.')", timeout=30000)
    wait_until(lambda: page.locator("[data-node-id=n4]").get_attribute("data-status") == "done")
    assert page.locator("path.edge[data-from=n3][data-to=n4]").count() == 1
    assert page.locator("[data-race-group=facts]").get_attribute("data-winner") == "n1"
    assert page.locator("[data-node-id=n2]").get_attribute("data-status") in ("skipped", "cancelled")
    assert not page.errors


def test_stop_cancels_a_long_task_and_marks_it_cancelled(live: Any, page: Any, script: ModelScript) -> None:
    script.plan = json.dumps([{"id": "n1", "type": "tool", "tool": "wait_long", "params": {"seconds": 60}, "depends_on": []}])
    script.answer = "never written"
    server = live(tools=TOOLS, graph={"step_timeout": 120.0})
    page.goto(server.url)
    page.get_by_test_id("mode").select_option("react")
    send(page, "wait for a minute please")
    page.wait_for_selector("[data-node-id=n1][data-status=running]")
    page.get_by_test_id("stop").click()
    page.wait_for_selector("[data-node-id=n1][data-status=cancelled]", timeout=10000)
    page.wait_for_selector(".interrupted")
    assert page.get_by_test_id("stop").is_hidden()


def test_an_uploaded_document_is_listed_and_cited_under_the_answer(live: Any, page: Any, script: ModelScript,
                                                                 tmp_path: Path) -> None:
    doc = tmp_path / "otters.md"
    doc.write_text("# Otter facts\n\nSea otters hold hands while they sleep so they do not drift apart.\n", encoding="utf-8")
    bad = tmp_path / "image.bin"
    bad.write_bytes(b"\x00\x01binary")
    script.answer = "Sea otters hold hands while sleeping [1]."
    server = live(tools=TOOLS)
    page.goto(server.url + "/#/knowledge")
    page.get_by_test_id("file-input").set_input_files([str(doc), str(bad)])
    page.wait_for_selector("[data-file='otters.md'][data-state=done]")
    page.wait_for_selector("[data-file='image.bin'][data-state=failed]")
    assert "image.bin" in page.get_by_test_id("uploads").inner_text()
    page.wait_for_selector("[data-testid=documents] a:has-text('Otter facts')")
    screenshot(page, "knowledge.png")
    page.goto(server.url + "/#/chat")
    page.get_by_test_id("mode").select_option("rag")
    send(page, "why do sea otters hold hands while they sleep?")
    page.wait_for_selector("[data-testid=answer]:has-text('hold hands')")
    citation = page.wait_for_selector("[data-testid=citations] .citation")
    assert citation is not None
    assert "Otter facts" in page.get_by_test_id("citations").inner_text()
    page.locator("[data-testid=citations] a").first.click()
    page.wait_for_selector("[data-testid=doc-viewer]:has-text('drift apart')")


def test_shared_documents_are_listed_as_shared_and_only_ones_own_can_be_deleted(live: Any, page: Any,
                                                                                tmp_path: Path) -> None:
    server = live(tools=TOOLS, keys=True)
    engine = server.agent.services.knowledge
    handbook = engine.ingest_text("Feeding handbook", "Every animal is fed twice a day.", source="handbook.md",
                                  wait=True).document.id
    mine = tmp_path / "otters.md"
    mine.write_text("# Otter notes\n\nSea otters hold hands while they sleep.\n", encoding="utf-8")
    page.goto(server.url + "/#/knowledge")
    page.get_by_test_id("api-key").fill("key-alice")
    page.get_by_test_id("api-key").press("Enter")
    page.get_by_test_id("file-input").set_input_files([str(mine)])
    page.wait_for_selector("[data-testid=documents] a:has-text('Otter notes')")
    shared_row = page.locator(f"tr[data-document-id='{handbook}']")
    expect(shared_row.get_by_test_id("shared")).to_be_visible()
    expect(shared_row.get_by_test_id("delete")).to_be_hidden()
    own_row = page.locator("tr[data-shared=false]")
    expect(own_row.get_by_test_id("shared")).to_be_hidden()
    page.on("dialog", lambda dialog: dialog.accept())
    own_row.get_by_test_id("delete").click()
    expect(own_row).to_have_count(0)
    expect(shared_row).to_have_count(1)


CRANES = "# 港口起重机 <img src=x onerror=window.__xss=1> [draft]\n\n" + "\n\n".join(
    f"Crane {i} lifts forty containers an hour at berth {i}, then waits for the next ship to dock." * 2
    for i in range(12))


def test_an_uploads_vectors_show_their_progress_while_they_fill_then_the_row_turns_done(
        live: Any, page: Any, script: ModelScript, tmp_path: Path) -> None:
    server = live(tools=TOOLS)
    engine = server.agent.services.knowledge
    assert engine is not None and engine._filler is not None
    assert engine._filler.stop(30)  # hold the vectors back: the test fills them, batch by batch
    doc = tmp_path / "港口 [draft].md"
    doc.write_text(CRANES, encoding="utf-8")
    page.goto(server.url + "/#/knowledge")
    page.get_by_test_id("file-input").set_input_files([str(doc)])
    expect(page.locator("[data-file='港口 [draft].md']")).to_have_attribute("data-state", "done")
    [listed] = httpx.get(server.url + "/api/documents").json()
    total = listed["chunks"]
    assert listed["search"] == "keyword" and listed["embedded_chunks"] == 0 and total > 3
    row = page.locator(f"[data-testid=documents] tr[data-document-id='{listed['id']}']")
    expect(row.locator("a")).to_have_text("港口起重机 <img src=x onerror=window.__xss=1> [draft]")  # text, not markup
    expect(row).to_have_attribute("data-search", "keyword")
    vectors = row.get_by_test_id("vectors")
    expect(vectors).to_have_text(f"vectors 0 / {total} · keyword search until done")
    expect(vectors.locator("progress")).to_have_attribute("max", str(total))
    expect(vectors.locator("progress")).to_have_attribute("value", "0")
    expect(page.get_by_test_id("documents")).to_have_attribute("data-polling", "true")
    screenshot(page, "knowledge-vectors.png")

    assert engine.store.fill_pending(engine.embed_passages, 3, listed["id"]) == 3  # one batch of three
    expect(vectors).to_have_text(f"vectors 3 / {total} · keyword search until done")  # the open page follows
    expect(vectors.locator("progress")).to_have_attribute("value", "3")

    engine.fill_vectors()
    expect(row).to_have_attribute("data-search", "hybrid")
    expect(vectors).to_be_hidden()
    expect(row.locator("progress")).to_have_count(0)
    expect(page.get_by_test_id("documents")).to_have_attribute("data-polling", "false")  # done: no more asking
    assert page.evaluate("window.__xss") is None
    assert not page.errors


ODD_DOCUMENTS = [
    {"id": "zero", "title": "No chunks", "chunks": 0, "embedded_chunks": 0, "search": "keyword", "indexed": True},
    {"id": "stored", "title": "Stored, not indexed", "chunks": 5, "embedded_chunks": 0, "search": "none", "indexed": False},
    {"id": "unknown", "title": "No counts", "search": "keyword", "indexed": True},
    {"id": "over", "title": "More vectors than chunks", "chunks": 4, "embedded_chunks": 9, "search": "keyword", "indexed": True},
    {"id": "text", "title": "Counts as text", "chunks": "many", "embedded_chunks": "some", "search": "keyword", "indexed": True},
    {"id": "one", "title": "One chunk, embedded", "chunks": 1, "embedded_chunks": 1, "search": "hybrid", "indexed": True},
]


def knowledge_page_listing(live: Any, page: Any, documents: list[dict[str, Any]]) -> Any:
    """The knowledge page of a live server whose documents list answers ``documents`` (uploads and
    deletes reach the server): the page's documents table."""

    def answer(route: Route) -> None:
        if route.request.method == "GET":
            route.fulfill(json=documents)
        else:
            route.continue_()

    server = live(tools=TOOLS)
    page.route("**/api/documents", answer)
    page.goto(server.url + "/#/knowledge")
    return page.get_by_test_id("documents")


def test_documents_whose_counts_make_no_bar_show_none_and_a_pending_one_shows_its_counts_in_both_languages(
        live: Any, page: Any, script: ModelScript) -> None:
    documents = [*ODD_DOCUMENTS, {"id": "big", "title": "手册 <b>v2</b>", "chunks": 1535, "embedded_chunks": 120,
                                  "search": "keyword", "indexed": True}]

    table = knowledge_page_listing(live, page, documents)
    expect(table.locator("tr[data-document-id]")).to_have_count(len(documents))
    expect(table.locator("progress")).to_have_count(1)
    big = table.locator("tr[data-document-id=big]")
    expect(big.get_by_test_id("vectors")).to_have_text("vectors 120 / 1,535 · keyword search until done")
    expect(big.locator("a")).to_have_text("手册 <b>v2</b>")
    for odd in ODD_DOCUMENTS:
        expect(table.locator(f"tr[data-document-id={odd['id']}]").get_by_test_id("vectors")).to_be_hidden()
    text = table.inner_text()
    assert "NaN" not in text and "undefined" not in text and "Infinity" not in text
    expect(table.locator("tr[data-document-id=one] td.num")).to_have_text("1 chunk")
    expect(big.locator("td.num")).to_have_text("1,535 chunks")
    expect(table).to_have_attribute("data-polling", "true")

    page.get_by_test_id("lang").click()
    expect(big.get_by_test_id("vectors")).to_have_text("向量 120 / 1,535 · 完成前仅用关键词检索")

    documents[-1] = {**documents[-1], "embedded_chunks": 1535, "search": "hybrid"}  # the next poll finds it done
    expect(big).to_have_attribute("data-search", "hybrid")
    expect(big.get_by_test_id("vectors")).to_be_hidden()
    expect(table).to_have_attribute("data-polling", "false")
    assert not page.errors


WRONG_KEY = "sk-wrong-key-0123456789"


def test_an_uploads_vectors_that_cannot_be_computed_say_why_under_the_document_and_poll_slower(
        live: Any, page: Any, script: ModelScript, tmp_path: Path) -> None:
    from saber.rag import OpenAIEmbedder
    from saber.testing import FakeOpenAIServer

    with FakeOpenAIServer(embedding_dimensions=16, api_key="sk-right") as embeddings:
        server = live(tools=TOOLS, embedder=OpenAIEmbedder(base_url=embeddings.base_url, model="text-embedding-3-small",
                                                           api_key=WRONG_KEY, dim=16))
        engine = server.agent.services.knowledge
        assert engine is not None and engine._filler is not None
        doc = tmp_path / "cranes.md"
        doc.write_text(CRANES, encoding="utf-8")
        page.goto(server.url + "/#/knowledge")
        page.get_by_test_id("file-input").set_input_files([str(doc)])
        expect(page.locator("[data-file='cranes.md']")).to_have_attribute("data-state", "done")
        assert engine._filler.wait_attempt(60)  # the background fill asked the endpoint, which said 401
        [listed] = httpx.get(server.url + "/api/documents").json()
        total = listed["chunks"]
        reason = (f"embedder openai:text-embedding-3-small at {embeddings.base_url}/embeddings answered 401: "
                  "Incorrect API key provided (check embedding.api_key)")
        assert listed["vectors"]["state"] == "failing" and listed["vectors"]["error"] == reason
        row = page.locator(f"[data-testid=documents] tr[data-document-id='{listed['id']}']")
        vectors = row.get_by_test_id("vectors")
        expect(vectors).to_have_text(f"vectors 0 / {total} · embedding failing: {reason} · retrying")
        expect(vectors).to_have_attribute("data-state", "failing")
        expect(row).to_have_attribute("data-search", "keyword")
        table = page.get_by_test_id("documents")
        expect(table).to_have_attribute("data-polling", "true")
        expect(table).to_have_attribute("data-poll-ms", "10000")  # still asking, less often than while filling
        screenshot(page, "knowledge-vectors-failing.png")
        page.get_by_test_id("lang").click()
        expect(vectors).to_have_text(f"向量 0 / {total} · 向量计算失败: {reason} · 正在重试")
        assert WRONG_KEY not in page.content()

        embeddings.api_key = WRONG_KEY  # the endpoint takes the key now: the next fill works
        assert engine.fill_vectors() == total
        expect(row).to_have_attribute("data-search", "hybrid", timeout=30_000)  # at the next (slower) poll
        expect(vectors).to_be_hidden()
        expect(table).to_have_attribute("data-polling", "false")
        assert not page.errors


def test_a_failing_fill_without_a_reason_or_a_retry_and_a_reason_with_markup_show_as_text(
        live: Any, page: Any, script: ModelScript) -> None:
    pending = {"chunks": 40, "embedded_chunks": 8, "search": "keyword", "indexed": True}
    documents = [
        {"id": "markup", "title": "Markup", **pending,
         "vectors": {"state": "failing", "error": "<img src=x onerror=window.__xss=1> refused", "retry_in_s": 12.5}},
        {"id": "bare", "title": "Bare", **pending, "vectors": {"state": "failing", "error": None, "retry_in_s": None}},
        {"id": "filling", "title": "Filling", **pending, "vectors": {"state": "filling", "error": None}},
        {"id": "done", "title": "Done", **pending, "embedded_chunks": 40, "search": "hybrid",
         "vectors": {"state": "failing", "error": "stale", "retry_in_s": 3}},
    ]

    table = knowledge_page_listing(live, page, documents)
    expect(table.locator("tr[data-document-id]")).to_have_count(len(documents))
    rows = {d["id"]: table.locator(f"tr[data-document-id={d['id']}]").get_by_test_id("vectors") for d in documents}
    expect(rows["markup"]).to_have_text("vectors 8 / 40 · embedding failing: <img src=x onerror=window.__xss=1> "
                                        "refused · retrying")
    expect(rows["bare"]).to_have_text("vectors 8 / 40 · embedding failing")  # no reason known, no retry planned
    expect(rows["filling"]).to_have_text("vectors 8 / 40 · keyword search until done")
    expect(rows["done"]).to_be_hidden()  # its vectors are all there: nothing is failing for it
    expect(table).to_have_attribute("data-poll-ms", "10000")
    assert page.evaluate("window.__xss") is None

    documents[:2] = []  # the failing ones are gone: the next poll is back to the usual pace
    expect(table.locator("tr[data-document-id]")).to_have_count(2, timeout=30_000)
    expect(table).to_have_attribute("data-poll-ms", "2000")
    assert not page.errors


def test_markdown_from_the_model_cannot_run_script(live: Any, page: Any, script: ModelScript) -> None:
    script.answer = ("Hi <script>window.__xss = 1</script> <img src=x onerror=\"window.__xss = 2\"> "
                     "[click](javascript:window.__xss=3) <a href=\"javascript:window.__xss=4\">a</a>"
                     "<svg onload=\"window.__xss=5\"></svg>\n\n```python\nprint('ok')\n```")
    server = live(tools=TOOLS)
    page.goto(server.url)
    send(page, "show me html")
    page.wait_for_selector("[data-testid=answer] pre code.hljs")
    answer = page.get_by_test_id("answer").last
    for link in answer.locator("a").all():
        link.click(modifiers=["Control"], no_wait_after=True)
    html = answer.inner_html()
    assert "<script" not in html and "onerror" not in html and "javascript:" not in html and "onload" not in html
    assert page.evaluate("window.__xss") is None
    response = httpx.get(server.url + "/")
    assert "script-src 'self'" in response.headers["content-security-policy"]


def test_a_chinese_query_and_answer_render_without_missing_glyphs(live: Any, page: Any, script: ModelScript) -> None:
    script.answer = "你好！今天北京天气晴朗。"
    server = live(tools=TOOLS)
    page.goto(server.url)
    send(page, "你好，北京今天怎么样")
    page.wait_for_selector("[data-testid=answer]:has-text('北京天气晴朗')")
    # Each character drawn in the page's font must differ from the font's "missing glyph" box.
    missing = page.evaluate("""(text) => {
        const font = getComputedStyle(document.querySelector('[data-testid=answer]')).font;
        const draw = (ch) => { const c = document.createElement('canvas'); c.width = 40; c.height = 40;
            const g = c.getContext('2d'); g.font = font; g.fillText(ch, 4, 30); return c.toDataURL(); };
        const tofu = draw('\\u{10FFFD}');
        return [...text].filter((ch) => ch.trim() && draw(ch) === tofu);
    }""", "你好今天北京天气晴朗怎么样对话知识库")
    assert missing == []
    page.get_by_test_id("lang").click()
    page.wait_for_selector("header.top nav a:has-text('对话')")


def test_sign_in_with_an_api_key_when_the_server_has_keys(live: Any, page: Any, script: ModelScript) -> None:
    server = live(tools=TOOLS, keys=True)
    page.goto(server.url)
    page.wait_for_selector("[data-testid=api-key]")
    page.get_by_test_id("api-key").fill("wrong-key")
    page.get_by_test_id("api-key").press("Enter")
    page.wait_for_selector("text=That key was refused.")
    page.get_by_test_id("api-key").fill("key-alice")
    page.get_by_test_id("api-key").press("Enter")
    page.wait_for_selector("[data-testid=composer]")
    send(page, "hello")
    page.wait_for_selector("[data-testid=answer]:has-text('Hello from the fake model.')")


def test_phone_width_and_keyboard(live: Any, browser: Any, script: ModelScript) -> None:
    server = live(tools=TOOLS)
    context = browser.new_context(viewport={"width": 375, "height": 740}, locale="zh-CN")
    page = context.new_page()
    page.goto(server.url)
    page.wait_for_selector("[data-testid=composer]")
    assert page.locator("header.top nav a").first.inner_text() == "对话"
    assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
    page.get_by_test_id("composer").fill("第一行")
    page.get_by_test_id("composer").press("Shift+Enter")
    page.get_by_test_id("composer").type("第二行")
    assert page.get_by_test_id("composer").input_value() == "第一行\n第二行"
    page.get_by_test_id("composer").press("Enter")
    page.wait_for_selector("[data-testid=answer]:has-text('Hello from the fake model.')")
    assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
    context.close()


def test_history_survives_a_reload(live: Any, page: Any, script: ModelScript) -> None:
    server = live(tools=TOOLS)
    page.goto(server.url)
    send(page, "remember this conversation")
    page.wait_for_selector("[data-testid=answer]:has-text('Hello from the fake model.')")
    page.reload()
    page.wait_for_selector(".message.user:has-text('remember this conversation')")
    assert "Hello from the fake model." in page.get_by_test_id("answer").last.inner_text()


LAUNCHED: list[str] = []


@tool(requires_approval=True)
async def launch_rocket(target: str) -> str:
    """Launch a rocket (asks a person first).

    Args:
        target: Where to.
    """
    LAUNCHED.append(target)
    return f"launched to {target}"


def test_a_waiting_step_is_approved_from_its_node(live: Any, page: Any, script: ModelScript) -> None:
    LAUNCHED.clear()
    script.plan = json.dumps([
        {"id": "n1", "type": "tool", "tool": "launch_rocket", "params": {"target": "the moon"}, "depends_on": []},
        {"id": "n2", "type": "tool", "tool": "measure", "params": {"what": "the fuel"}, "depends_on": []},
    ])
    script.answer = "Launched to the moon."
    server = live(tools=[*TOOLS, launch_rocket])
    page.goto(server.url)
    page.get_by_test_id("mode").select_option("react")
    send(page, "launch the rocket to the moon and measure the fuel")
    page.wait_for_selector("[data-node-id=n1][data-status=waiting]")
    page.wait_for_selector("[data-node-id=n2][data-status=done]")  # the other branch ran meanwhile
    assert LAUNCHED == []
    page.locator(".node-detail button.approve").click()
    page.wait_for_selector("[data-testid=answer]:has-text('Launched to the moon.')", timeout=20000)
    wait_until(lambda: page.locator("[data-node-id=n1]").get_attribute("data-status") == "done")
    assert LAUNCHED == ["the moon"]
