"""The knowledge base over HTTP: upload (multipart), list, read and delete the caller's documents.

An upload answers once its documents are keyword-searchable; their vectors are filled in the
background (``embedded_chunks`` of ``chunks``; ``search`` turns from ``keyword`` to ``hybrid``).
While a document's are pending, ``vectors`` says how the fill is going, and why it fails when the
embedder or the store keeps failing (``state: failing``, ``error``, ``retry_in_s``).
"""

from __future__ import annotations

import asyncio
import re
import shutil
import uuid
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, File, Request, UploadFile

from saber.rag.documents import Document, EmbeddingError, FileTooLarge, RagError
from saber.rag.engine import RagEngine
from saber.rag.filler import FillStatus
from saber.server.deps import AgentDep, SettingsDep, UserDep
from saber.server.errors import ERROR_RESPONSES, ApiError, not_found
from saber.server.schemas import DeletedResponse, DocumentDetail, DocumentOut, VectorFill

router = APIRouter(prefix="/api/documents", tags=["documents"], responses=ERROR_RESPONSES)

MAX_FILES = 16


def _out(doc: Document, status: str | None = None, fill: FillStatus | None = None) -> DocumentOut:
    source = Path(doc.source).name if Path(doc.source).is_absolute() else doc.source  # never the server's paths
    vectors = VectorFill(**fill.to_dict()) if fill is not None and doc.search == "keyword" else None
    return DocumentOut(id=doc.id, title=doc.title, source=source, doc_type=doc.doc_type, chunks=doc.chunk_count,
                       indexed=doc.indexed, created_at=doc.created_at.isoformat() if doc.created_at else None,
                       status=status, embedded_chunks=doc.embedded_count, search=doc.search, vectors=vectors)


async def _fill_status(engine: RagEngine, docs: list[Document]) -> FillStatus | None:
    """The vector filler's status when one of ``docs`` waits for vectors (it reads the store)."""
    if not any(d.search == "keyword" for d in docs):
        return None
    return await asyncio.to_thread(engine.vector_status)


def _engine(agent: AgentDep) -> RagEngine:
    engine = agent.services.knowledge
    if engine is None:
        raise ApiError(503, "unavailable", "this agent has no knowledge base")
    return engine


def _safe_name(name: str | None) -> str:
    base = Path(name or "upload.txt").name
    return re.sub(r"[^\w.\-\u00a0-\uffff]+", "_", base)[:120] or "upload.txt"


async def _save(upload: UploadFile, folder: Path, limit: int) -> Path:
    """Copy the spooled upload into ``folder`` (off the event loop), refusing it past ``limit`` bytes."""
    target = folder / _safe_name(upload.filename)
    await asyncio.to_thread(folder.mkdir, parents=True, exist_ok=True)
    out = await asyncio.to_thread(target.open, "wb")
    size = 0
    try:
        while chunk := await upload.read(1 << 20):
            size += len(chunk)
            if size > limit:
                break
            await asyncio.to_thread(out.write, chunk)
    finally:
        await asyncio.to_thread(out.close)
    if size > limit:
        await asyncio.to_thread(shutil.rmtree, folder, True)
        raise ApiError(413, "too_large", f"{upload.filename}: over the knowledge base's limit of "
                                         f"{limit / 1048576:g} MB per file")
    return target


@router.post("", response_model=list[DocumentOut], status_code=201, summary="Add files to the knowledge base")
async def upload(files: Annotated[list[UploadFile], File(description="One or more files (txt, md, html, pdf, docx).")],
                 request: Request, agent: AgentDep, settings: SettingsDep, user: UserDep) -> list[DocumentOut]:
    engine = _engine(agent)
    if len(files) > MAX_FILES:
        raise ApiError(413, "too_large", f"{len(files)} files in one upload: at most {MAX_FILES}")
    out: list[DocumentOut] = []
    for upload_file in files:
        folder = settings.home / "uploads" / uuid.uuid4().hex
        path = await _save(upload_file, folder, engine.max_bytes)
        try:
            result = await asyncio.to_thread(engine.ingest_file, path, wait=False)
        except FileTooLarge as exc:
            raise ApiError(413, "too_large", str(exc)) from None
        except EmbeddingError as exc:  # e.g. the embedder's vector size could not be asked: nothing was stored
            shutil.rmtree(folder, ignore_errors=True)
            raise ApiError(503, "embedder_unavailable", f"{upload_file.filename}: not stored: {exc}") from None
        except RagError as exc:
            shutil.rmtree(folder, ignore_errors=True)
            raise ApiError(422, "invalid_document", str(exc)) from None
        await asyncio.to_thread(engine.add_owner, result.document.id, user)
        out.append(_out(result.document, result.status, await _fill_status(engine, [result.document])))
    return out


@router.get("", response_model=list[DocumentOut], summary="The caller's documents")
async def list_documents(request: Request, agent: AgentDep, user: UserDep) -> list[DocumentOut]:
    engine = _engine(agent)
    mine = await asyncio.to_thread(engine.owned_by, user)
    docs = [d for d in await asyncio.to_thread(engine.list_documents, hidden=()) if d.id in mine]
    fill = await _fill_status(engine, docs)
    return [_out(d, fill=fill) for d in docs]


@router.get("/{document_id}", response_model=DocumentDetail, summary="One of the caller's documents, with its text")
async def get_document(document_id: str, agent: AgentDep, user: UserDep) -> DocumentDetail:
    engine = _engine(agent)
    if document_id not in await asyncio.to_thread(engine.owned_by, user):
        raise not_found(f"document {document_id!r}")
    try:
        doc = await asyncio.to_thread(engine.get_document, document_id)
    except RagError:
        raise not_found(f"document {document_id!r}") from None
    return DocumentDetail(**_out(doc, fill=await _fill_status(engine, [doc])).model_dump(), text=doc.content or "")


@router.delete("/{document_id}", response_model=DeletedResponse, summary="Delete one of the caller's documents")
async def delete_document(document_id: str, agent: AgentDep, user: UserDep) -> DeletedResponse:
    engine = _engine(agent)
    if document_id not in await asyncio.to_thread(engine.owned_by, user):
        raise not_found(f"document {document_id!r}")
    if await asyncio.to_thread(engine.release, document_id, user):
        await asyncio.to_thread(engine.delete_document, document_id)
    return DeletedResponse(deleted=True)
