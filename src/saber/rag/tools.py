"""The knowledge-base tools, built over one engine (closures: the agent registers them at start-up).

``rag_search`` returns only the answer text to the model; the hits (document, chunk, score and
what the score is) go to the request's event stream as ``rag_result``.

``write_document`` and ``ingest_document`` return once the document is keyword-searchable; its
vectors are filled in the background (``embedded_chunks`` of ``chunks``; ``search`` is ``keyword``
until they are all there, then ``hybrid``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from saber.events import RagResult, emit
from saber.graph.idempotency import idempotency_key
from saber.rag.documents import Document, DocumentNotFound, EmbeddingError, RagError
from saber.rag.engine import RagEngine
from saber.rag.scope import current_scope
from saber.tools import Tool, ToolError

EMPTY_MESSAGE = "the knowledge base is empty: upload documents first"


def _written_by_this_call(engine: RagEngine, args: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """The source to write under and, if this very node already wrote it (a resume after a crash
    between the write and the checkpoint), that document. Inside a graph run the default source
    carries the node's idempotency key, so running the node again never writes a second document."""
    source = args.get("source") or f"agent:{args['title']}"
    scope = current_scope()
    if scope is not None and scope.isolated:  # one user's report never becomes a version of another's
        source = f"{scope.user_id}/{source}"
    key = idempotency_key()
    if key is None or args.get("source"):
        return source, None
    source = f"{source}#{key}"
    done = next((d for d in engine.list_documents() if d.source == source), None)
    if done is None:
        return source, None
    return source, {"document_id": done.id, "status": "unchanged", "version": done.version, "indexed": done.indexed,
                    "chunks": done.chunk_count, **_progress(done), "idempotency_key": key}


def _requester() -> str | None:
    """Whom the agent writes for: a document written in a user's request is theirs (on a server
    with API keys, theirs alone); outside a request it is shared."""
    scope = current_scope()
    return None if scope is None else scope.user_id


def _progress(doc: Document) -> dict[str, Any]:
    """How far its vectors are: keyword search finds every chunk at once, vector search the embedded ones."""
    return {"embedded_chunks": doc.embedded_count, "search": doc.search}


def knowledge_tools(engine: RagEngine) -> list[Tool]:
    """rag_search, write_document, list_documents, read_document, ingest_document over ``engine``."""

    async def rag_search(args: dict[str, Any]) -> str:
        query = str(args["query"]).strip()
        if not query:
            raise ToolError("rag_search: query must not be empty")
        loaded = await asyncio.to_thread(lambda: engine.loaded)
        if not loaded:
            raise ToolError(EMPTY_MESSAGE)
        answer, hits = await engine.aquery(query, int(args.get("k") or 5))  # the embedder down: keywords only, said
        emit(RagResult(query=query, hits=[h.to_event() for h in hits]))
        return answer

    def write_document(args: dict[str, Any]) -> dict[str, Any]:
        source, done = _written_by_this_call(engine, args)
        if done is not None:
            return done
        try:
            result = engine.ingest_text(
                args["title"], args["content_md"], source=source,
                doc_type=args.get("doc_type") or "report", summary=args.get("summary") or "",
                index=bool(args.get("ingest_to_rag", True)), wait=False, owner=_requester(),
            )
        except EmbeddingError as exc:
            raise ToolError(f"write_document: {exc}", retryable=exc.retryable) from None
        except RagError as exc:
            raise ToolError(f"write_document: {exc}") from None
        d = result.document
        return {"document_id": d.id, "status": result.status, "version": d.version, "indexed": d.indexed,
                "chunks": d.chunk_count, **_progress(d)}

    def list_documents(args: dict[str, Any]) -> list[dict[str, Any]]:
        return [d.to_dict() for d in engine.list_documents()]

    def read_document(args: dict[str, Any]) -> dict[str, Any]:
        try:
            return engine.visible_document(str(args["document_id"])).to_dict(with_content=True)
        except DocumentNotFound as exc:
            raise ToolError(f"read_document: {exc}") from None

    def ingest_document(args: dict[str, Any]) -> dict[str, Any]:
        try:
            engine.visible_document(str(args["document_id"]))
            result = engine.index_document(str(args["document_id"]), wait=False)
        except EmbeddingError as exc:
            raise ToolError(f"ingest_document: {exc}", retryable=exc.retryable) from None
        except RagError as exc:
            raise ToolError(f"ingest_document: {exc}") from None
        return {"document_id": result.document.id, "status": result.status, "chunks": result.document.chunk_count,
                **_progress(result.document)}

    string = {"type": "string"}
    return [
        Tool.from_json_schema(
            "rag_search",
            "Search the user's knowledge base (their uploaded documents and saved reports, and shared "
            "documents) and return the most relevant passages with their sources.",
            {"properties": {"query": {**string, "description": "what to look for, in the user's words"},
                            "k": {"type": "integer", "description": "passages to return", "default": 5,
                                  "minimum": 1, "maximum": 20}},
             "required": ["query"]},
            rag_search, race_group="search",
        ),
        Tool.from_json_schema(
            "write_document",
            "Save a Markdown document (a report, notes) to the knowledge base. Saving the same content "
            "again does nothing; the same title (or source) with new content becomes a new version.",
            {"properties": {
                "title": {**string, "description": "document title"},
                "content_md": {**string, "description": "the document, in Markdown"},
                "doc_type": {**string, "description": "report | note | summary ...", "default": "report"},
                "source": {**string, "description": "where the content came from (documents with the same "
                                                      "source are versions of one document); default: the title"},
                "summary": {**string, "description": "one or two sentences", "default": ""},
                "ingest_to_rag": {"type": "boolean", "default": True,
                                  "description": "index it now so rag_search finds it"}},
             "required": ["title", "content_md"]},
            write_document,
        ),
        Tool.from_json_schema("list_documents", "List the documents in the knowledge base (id, title, version...).",
                              {"properties": {}}, list_documents),
        Tool.from_json_schema(
            "read_document", "Read one stored document in full.",
            {"properties": {"document_id": {**string, "description": "an id from list_documents"}},
             "required": ["document_id"]},
            read_document,
        ),
        Tool.from_json_schema(
            "ingest_document", "Index a stored document so that rag_search can find it.",
            {"properties": {"document_id": {**string, "description": "an id from list_documents"}},
             "required": ["document_id"]},
            ingest_document,
        ),
    ]
