from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from saber.events import Event, RagResult, emitting_to
from saber.rag import RagEngine, knowledge_tools
from saber.tools import Tool, ToolError

REPORT = "# K8s report\n\nClusterIP is the default service type; NodePort opens a port on each node."


def _tools(engine: RagEngine) -> dict[str, Tool]:
    return {t.name: t for t in knowledge_tools(engine)}


async def test_rag_search_on_empty_store_is_a_clear_error(engine: RagEngine) -> None:
    tools = _tools(engine)
    assert tools["rag_search"].race_group == "search"
    with pytest.raises(ToolError, match="the knowledge base is empty: upload documents first"):
        await tools["rag_search"].run({"query": "anything"})


async def test_rag_search_returns_text_and_emits_hits(engine: RagEngine) -> None:
    engine.ingest_text("K8s report", REPORT)
    events: list[Event] = []
    with emitting_to(events.append):
        answer = await _tools(engine)["rag_search"].run({"query": "NodePort"})
    assert isinstance(answer, str) and "NodePort" in answer and "score" not in answer
    [event] = [e for e in events if isinstance(e, RagResult)]
    assert event.query == "NodePort" and event.hits
    first = event.hits[0]
    assert first["title"] == "K8s report" and first["score_kind"] == "rrf" and "chunk" in first


@pytest.mark.parametrize("flag", [True, "true", "TRUE"])
async def test_write_document_coerces_ingest_flag(engine: RagEngine, flag: object) -> None:
    out = await _tools(engine)["write_document"].run({"title": "K8s report", "content_md": REPORT, "ingest_to_rag": flag})
    assert out["indexed"] is True and out["chunks"] > 0 and engine.loaded
    assert out["search"] in ("keyword", "hybrid") and 0 <= out["embedded_chunks"] <= out["chunks"]


async def test_write_document_is_stored_once_when_retried_concurrently(engine: RagEngine) -> None:
    write = _tools(engine)["write_document"]
    args = {"title": "K8s report", "content_md": REPORT, "ingest_to_rag": "true"}
    results = await asyncio.gather(*(write.run(args) for _ in range(4)))
    assert len({r["document_id"] for r in results}) == 1
    assert sorted(r["status"] for r in results).count("created") == 1
    assert len(engine.list_documents()) == 1


async def test_write_without_index_then_ingest_document(engine: RagEngine) -> None:
    tools = _tools(engine)
    out = await tools["write_document"].run({"title": "Draft", "content_md": REPORT, "ingest_to_rag": "false"})
    assert out["indexed"] is False and not engine.loaded
    listed = await tools["list_documents"].run({})
    assert [d["id"] for d in listed] == [out["document_id"]]
    read = await tools["read_document"].run({"document_id": out["document_id"]})
    assert read["content"] == REPORT and read["title"] == "Draft"
    ingested = await tools["ingest_document"].run({"document_id": out["document_id"]})
    assert ingested["status"] == "indexed" and ingested["chunks"] > 0 and engine.loaded
    again = await tools["ingest_document"].run({"document_id": out["document_id"]})
    assert again["status"] == "unchanged"


async def test_unknown_document_and_bad_arguments(engine: RagEngine) -> None:
    tools = _tools(engine)
    with pytest.raises(ToolError, match="no document with id 'nope'"):
        await tools["read_document"].run({"document_id": "nope"})
    with pytest.raises(ToolError, match="content_md"):
        await tools["write_document"].run({"title": "x"})
    with pytest.raises(ToolError, match="ingest_to_rag"):
        await tools["write_document"].run({"title": "x", "content_md": "y", "ingest_to_rag": "maybe"})


async def test_documents_written_without_a_source_do_not_replace_each_other(tmp_path: Path) -> None:
    from saber.rag import HashingEmbedder, RagEngine, SQLiteStore, knowledge_tools

    engine = RagEngine(SQLiteStore(str(tmp_path / "kb.db")), HashingEmbedder())
    tools = {t.name: t for t in knowledge_tools(engine)}
    first = await tools["write_document"].run({"title": "Report on Tokyo", "content_md": "Tokyo has 14 million people."})
    second = await tools["write_document"].run({"title": "Report on Paris", "content_md": "Paris has 2 million people."})
    assert first["document_id"] != second["document_id"] and second["status"] == "created"
    assert sorted(d.title for d in engine.list_documents()) == ["Report on Paris", "Report on Tokyo"]
    revised = await tools["write_document"].run({"title": "Report on Tokyo", "content_md": "Tokyo has 14.1 million people."})
    assert revised["document_id"] == first["document_id"] and revised["version"] == 2
    engine.close()


async def test_a_failing_embedder_leaves_documents_findable_by_keywords(tmp_path: Path) -> None:
    """A failing embedder does not lose a write (it is keyword-searchable, its vectors pending);
    the search answers from keyword search and names the failure, whatever it is."""
    import httpx

    from saber.rag import OpenAIEmbedder, RagEngine, SQLiteStore, knowledge_tools

    for status in (401, 400, 429, 503):
        def handler(request: httpx.Request, status: int = status) -> httpx.Response:
            return httpx.Response(status, json={"error": {"message": f"status {status}"}})

        embedder = OpenAIEmbedder(base_url="http://embed.test/v1", model="m", dim=8, transport=httpx.MockTransport(handler))
        engine = RagEngine(SQLiteStore(str(tmp_path / f"kb{status}.db")), embedder)
        tools = {t.name: t for t in knowledge_tools(engine)}
        written = await tools["write_document"].run({"title": "t", "content_md": "some text"})
        assert written["indexed"] is True and written["search"] == "keyword" and written["embedded_chunks"] == 0
        assert [h.chunk for h in engine.search("some text", 3, mode="keyword")] == ["some text"]
        found = await tools["rag_search"].run({"query": "some text"})
        assert found.startswith("Vector search failed (embedder openai:m at http://embed.test/v1/embeddings "
                                f"answered {status}: status {status}"), found
        assert "keyword search only.\n1 passage(s)" in found and found.endswith("some text")
        engine.close(filler_timeout=5)


async def test_write_document_refuses_a_lossy_flag(engine: RagEngine) -> None:
    with pytest.raises(ToolError, match="ingest_to_rag: expected boolean"):
        await _tools(engine)["write_document"].run({"title": "K8s", "content_md": REPORT, "ingest_to_rag": "yes"})


async def test_write_document_run_again_by_a_resume_writes_once(engine: RagEngine, tmp_path: Path) -> None:
    """The node's idempotency key ties the document to (task, node): a resume that runs the node
    again (its first run's result never reached the checkpoint) returns the document it wrote."""
    from saber.graph import GraphRuntime, Node, SQLiteCheckpointStore

    tools = _tools(engine)
    store = SQLiteCheckpointStore(tmp_path / "cp.db")
    first = Node(id="n1", tool="write_document", params={"title": "Report", "content_md": REPORT})
    run = await GraphRuntime([first], tools, checkpoint=store, task_id="task-1").run()
    written = run.nodes["n1"].result
    assert written["status"] == "created"
    again = Node(id="n1", tool="write_document", params={"title": "Report", "content_md": REPORT + "\n\nMore."})
    rerun = await GraphRuntime([again], tools, checkpoint=store, task_id="task-1").run()
    assert rerun.nodes["n1"].result["document_id"] == written["document_id"]
    assert rerun.nodes["n1"].result["status"] == "unchanged"
    fresh = Node(id="n1", tool="write_document", params={"title": "Report", "content_md": REPORT + "\n\nMore."})
    other = await GraphRuntime([fresh], tools, checkpoint=store, task_id="task-2").run()
    assert other.nodes["n1"].result["status"] == "created", "another task writes its own document"
    assert len(engine.list_documents()) == 2
    await store.close()


async def test_write_document_returns_keyword_searchable_and_its_vectors_follow(engine: RagEngine) -> None:
    tools = _tools(engine)
    out = await tools["write_document"].run({"title": "K8s report", "content_md": REPORT * 6})
    assert out["indexed"] is True and out["search"] in ("keyword", "hybrid")
    assert engine.search("NodePort", 3, mode="keyword")[0].document_id == out["document_id"]
    assert engine._filler is not None and await asyncio.to_thread(engine._filler.wait_idle, 30)
    read = await tools["read_document"].run({"document_id": out["document_id"]})
    assert read["search"] == "hybrid" and read["embedded_chunks"] == read["chunk_count"] == out["chunks"]


async def test_in_an_isolated_scope_a_user_sees_shared_documents_and_their_own(engine: RagEngine) -> None:
    from saber.rag.scope import knowledge_scope

    shared = engine.ingest_text("Handbook", "Tea is served at four in the common room.").document.id
    tools = _tools(engine)
    with knowledge_scope("alice", isolated=True):
        mine = (await tools["write_document"].run({"title": "Alice notes", "content_md": "Alice takes green tea at four."}))
    alice = mine["document_id"]
    assert engine.owned_by("alice") == {alice}
    with knowledge_scope("bob", isolated=True):
        listed = {d["id"] for d in await tools["list_documents"].run({})}
        answer = await tools["rag_search"].run({"query": "tea at four"})
        with pytest.raises(ToolError, match="no document with id"):
            await tools["read_document"].run({"document_id": alice})
        with pytest.raises(ToolError, match="no document with id"):
            await tools["ingest_document"].run({"document_id": alice})
    assert listed == {shared} and "Alice" not in answer and "common room" in answer
    with knowledge_scope("alice", isolated=True):
        assert {d["id"] for d in await tools["list_documents"].run({})} == {shared, alice}
        assert (await tools["read_document"].run({"document_id": alice}))["title"] == "Alice notes"
    with knowledge_scope("bob", isolated=False):  # no API keys: one local user, everything shared
        assert {d["id"] for d in await tools["list_documents"].run({})} == {shared, alice}


def test_a_search_goes_deeper_past_hidden_documents(engine: RagEngine) -> None:
    engine.candidates = 5
    hidden = {engine.ingest_text(f"Other {i}", f"Lantern festival notes number {i}: lanterns, lanterns.").document.id
              for i in range(12)}
    visible = engine.ingest_text("Mine", "One line about a lantern among other things.").document.id
    hits = engine.search("lantern festival lanterns", 3, hidden=hidden)
    assert [h.document_id for h in hits] == [visible]
    assert len(engine.search("lantern festival lanterns", 3, hidden=set())) == 3
    assert {d.id for d in engine.list_documents(hidden=hidden)} == {visible}


def test_owners_are_released_and_dropped_with_their_document(engine: RagEngine) -> None:
    doc = engine.ingest_text("Shared by two", "Both uploaded this very text.").document.id
    engine.add_owner(doc, "alice")
    engine.add_owner(doc, "alice")  # again: no error, no second row
    engine.add_owner(doc, "bob")
    assert engine.hidden_from("carol") == {doc} and engine.hidden_from("bob") == set()
    assert engine.release(doc, "alice") is False  # bob still holds it
    assert engine.hidden_from("alice") == {doc}
    assert engine.release(doc, "bob") is True
    engine.add_owner(doc, "bob")
    assert engine.delete_document(doc)
    assert engine.owned_by("bob") == set() and engine.hidden_from("carol") == set()


async def test_writing_the_text_of_a_shared_document_leaves_it_shared_and_titles_never_collide(
        engine: RagEngine) -> None:
    from saber.rag.scope import knowledge_scope

    shared = engine.ingest_text("Handbook", "Tea is served at four in the common room.").document.id
    tools = _tools(engine)
    with knowledge_scope("bob", isolated=True):
        same = await tools["write_document"].run({"title": "Handbook", "content_md": "Tea is served at four in the common room."})
        bobs = (await tools["write_document"].run({"title": "Notes", "content_md": "Bob likes oolong."}))["document_id"]
    assert same["document_id"] == shared and same["status"] == "unchanged" and engine.owned_by("bob") == {bobs}
    with knowledge_scope("alice", isolated=True):
        alices = (await tools["write_document"].run({"title": "Notes", "content_md": "Alice likes sencha."}))
        assert alices["status"] == "created" and alices["document_id"] != bobs  # not a new version of Bob's
        assert {d["id"] for d in await tools["list_documents"].run({})} == {shared, alices["document_id"]}
    assert engine.get_document(bobs).content == "Bob likes oolong."


async def test_two_users_writing_the_same_text_get_documents_of_their_own(engine: RagEngine) -> None:
    from saber.rag.scope import knowledge_scope

    tools = _tools(engine)
    text = "Alice takes green tea at four in the library."
    with knowledge_scope("alice", isolated=True):
        alices = await tools["write_document"].run({"title": "Tea notes", "content_md": text})
    with knowledge_scope("bob", isolated=True):
        bobs = await tools["write_document"].run({"title": "Tea notes", "content_md": text})
        again = await tools["write_document"].run({"title": "Copied notes", "content_md": text})
    assert (alices["status"], bobs["status"]) == ("created", "created") and bobs["document_id"] != alices["document_id"]
    assert (again["status"], again["document_id"]) == ("unchanged", bobs["document_id"])
    assert engine.owned_by("alice") == {alices["document_id"]} and engine.owned_by("bob") == {bobs["document_id"]}
    with knowledge_scope("alice", isolated=True):
        revised = await tools["write_document"].run({"title": "Tea notes", "content_md": "Alice now takes oolong."})
    assert (revised["status"], revised["document_id"]) == ("new_version", alices["document_id"])
    with knowledge_scope("bob", isolated=True):
        assert {d["id"] for d in await tools["list_documents"].run({})} == {bobs["document_id"]}
        assert (await tools["read_document"].run({"document_id": bobs["document_id"]}))["content"] == text
        assert "now takes oolong" not in await tools["rag_search"].run({"query": "oolong tea"})
