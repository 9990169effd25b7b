"""The knowledge base over HTTP: upload (multipart), list, read and delete the caller's documents.

An upload stores each file on its own and answers with every file's result (added, updated,
unchanged or failed, with the error). A document is titled by its content or else by its file
name as uploaded; the file is spooled to disk under a sanitised name, which no client sees, and
removed once read: the knowledge base keeps the text.

A caller lists and reads what its searches see: its own documents and the shared ones (``saber
ingest``'s, marked ``shared``). It deletes its own; a shared one only on a server without API
keys (one local user, the operator) or with an admin key (``server.admins``): ``deletable`` says.

An upload answers once its documents are keyword-searchable; their vectors are filled in the
background (``embedded_chunks`` of ``chunks``; ``search`` turns from ``keyword`` to ``hybrid``).
While a document's are pending, ``vectors`` says how the fill is going, and why it fails when the
embedder or the store keeps failing (``state: failing``, ``error``, ``retry_in_s``).
"""

from __future__ import annotations

import asyncio
import logging
import re
import shutil
import threading
import uuid
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, File, Request, UploadFile
from fastapi.responses import JSONResponse

from saber.config import Settings
from saber.rag.documents import Document, EmbeddingError, FileTooLarge, IngestResult, RagError
from saber.rag.engine import RagEngine
from saber.rag.filler import FillStatus
from saber.rag.limits import IngestCancelled
from saber.server.deps import AgentDep, SettingsDep, UserDep
from saber.server.disconnect import cancel_on_disconnect
from saber.server.errors import ERROR_RESPONSES, ApiError, ErrorDetail, not_found, request_id_of, shown
from saber.server.schemas import (
    DeletedResponse,
    DocumentDetail,
    DocumentOut,
    UploadFailed,
    UploadResponse,
    UploadResult,
    UploadStatus,
    VectorFill,
)

log = logging.getLogger(__name__)

router = APIRouter(prefix="/api/documents", tags=["documents"], responses=ERROR_RESPONSES)

MAX_FILES = 16


UPLOAD_SOURCE = "upload:"
"""An uploaded file's source is ``upload:<user id>/<file name>``: a user's upload of a name it
uploaded before is a new version of that document, and no path on the server is ever stored."""


def upload_source(user: str, name: str) -> str:
    return f"{UPLOAD_SOURCE}{user}/{name}"


def _shown_source(source: str) -> str:
    """What a client sees of a source: an upload's file name, never a path on the server."""
    if source.startswith(UPLOAD_SOURCE):
        return source.rpartition("/")[2]
    return Path(source).name if Path(source).is_absolute() else source


def _out(doc: Document, fill: FillStatus | None = None, *, shared: bool = False, deletable: bool = True) -> DocumentOut:
    vectors = VectorFill(**fill.to_dict()) if fill is not None and doc.search == "keyword" else None
    return DocumentOut(id=doc.id, title=doc.title, source=_shown_source(doc.source), doc_type=doc.doc_type,
                       chunks=doc.chunk_count, indexed=doc.indexed,
                       created_at=doc.created_at.isoformat() if doc.created_at else None,
                       embedded_chunks=doc.embedded_count, search=doc.search, vectors=vectors,
                       shared=shared, deletable=deletable)


class _View:
    """What one caller sees of the knowledge base: the documents hidden from it (other users'
    when the server has keys) and its own; whether it may delete the shared ones."""

    def __init__(self, engine: RagEngine, user: str, settings: Settings) -> None:
        self.mine = engine.owned_by(user)
        self.hidden = engine.hidden_from(user) if settings.has_api_keys else set()
        self.manages_shared = not settings.has_api_keys or user in settings.server.admins

    def visible(self, document_id: str) -> bool:
        return document_id not in self.hidden

    def shared(self, document_id: str) -> bool:
        return document_id not in self.mine

    def deletable(self, document_id: str) -> bool:
        return not self.shared(document_id) or self.manages_shared

    def out(self, doc: Document, fill: FillStatus | None) -> DocumentOut:
        return _out(doc, fill, shared=self.shared(doc.id), deletable=self.deletable(doc.id))


def _exists(engine: RagEngine, document_id: str) -> bool:
    try:
        engine.get_document(document_id)
    except RagError:
        return False
    return True


async def _view(engine: RagEngine, user: str, settings: Settings) -> _View:
    return await asyncio.to_thread(_View, engine, user, settings)


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


class _FileFailed(Exception):
    """One file of an upload that was not stored: the answer's status and code if every file fails so."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


_STATUS: dict[str, UploadStatus] = {"created": "added", "indexed": "added", "new_version": "updated",
                                    "unchanged": "unchanged"}


def _given_name(filename: str | None) -> str:
    """The file's name as the user gave it, without any folder (a browser may send one, either way of slashes)."""
    return re.split(r"[/\\]", filename or "")[-1].strip()


def _disk_name(name: str) -> str:
    """The name the upload is saved under: ``name`` with what a file system may mind replaced.
    A name with nothing usable in it ("", ".", "..") is refused."""
    safe = re.sub(r"[^\w.\-\u00a0-\uffff]+", "_", name)[:120]
    if not safe.strip("._"):
        raise _FileFailed(422, "invalid_document", f"{name!r}: not a usable file name")
    return safe


async def _save(upload: UploadFile, target: Path, name: str, limit: int) -> None:
    """Copy the spooled upload to ``target`` (off the event loop), refusing it past ``limit`` bytes."""
    await asyncio.to_thread(target.parent.mkdir, parents=True, exist_ok=True)
    out = await asyncio.to_thread(target.open, "wb")
    size = 0
    try:
        while chunk := await upload.read(1 << 20):
            size += len(chunk)
            if size > limit:
                raise _FileFailed(413, "too_large", f"{name}: over the knowledge base's limit of "
                                                    f"{limit / 1048576:g} MB per file")
            await asyncio.to_thread(out.write, chunk)
    finally:
        await asyncio.to_thread(out.close)


def _ingest(engine: RagEngine, path: Path, name: str, user: str, cancel: threading.Event) -> IngestResult:
    """Store the saved file (blocking) as ``user``'s: titled by its content or else by ``name``
    without its extension, its source the upload's (never ``path``); errors name the file as the
    user named it. The text of a shared document is that document, left shared; the text of
    another user's is a document of the user's own (nothing of the other's is shown or shared).
    Reading stops once ``cancel`` is set (the client went away) or a ``rag_max_*`` limit is passed;
    the document is written in one transaction after that, so a stopped ingest leaves nothing."""
    from saber.rag.loaders import load_file

    try:
        loaded = load_file(path, max_bytes=engine.max_bytes, limits=engine.read_limits, cancel=cancel)
        if cancel.is_set():
            raise IngestCancelled(f"{path.name}: the ingest was cancelled (its client went away); nothing was stored")
        title = loaded.title if loaded.title != path.stem else Path(name).stem
        return engine.ingest_text(title, loaded.text, source=upload_source(user, name), doc_type=loaded.doc_type,
                                  wait=False, owner=user)
    except FileTooLarge as exc:  # LimitExceeded too: its message names the rag_max_* setting
        raise _FileFailed(413, "too_large", _named(str(exc), path.name, name)) from None
    except IngestCancelled as exc:
        log.info("%s", _named(str(exc), path.name, name))
        raise _FileFailed(499, "client_closed_request", _named(str(exc), path.name, name)) from None
    except EmbeddingError as exc:  # e.g. the embedder's vector size could not be asked: nothing was stored
        raise _FileFailed(503, "embedder_unavailable", f"{name}: not stored: {exc}") from None
    except RagError as exc:
        raise _FileFailed(422, "invalid_document", _named(str(exc), path.name, name)) from None


def _named(message: str, disk: str, name: str) -> str:
    return name + message[len(disk):] if message.startswith(disk + ":") else message


async def _read_and_store(engine: RagEngine, target: Path, name: str, user: str, cancel: threading.Event) -> IngestResult:
    """``_ingest`` in a worker thread. Cancelled (the client hung up), it sets ``cancel`` — the
    reading stops at its next check — and waits for the thread to end before going on."""
    work = asyncio.ensure_future(asyncio.to_thread(_ingest, engine, target, name, user, cancel))
    try:
        return await asyncio.shield(work)
    except asyncio.CancelledError:
        cancel.set()
        await asyncio.gather(work, return_exceptions=True)
        raise


async def _upload_one(upload_file: UploadFile, engine: RagEngine, settings: Settings,
                      user: str, cancel: threading.Event) -> tuple[UploadResult, _FileFailed | None]:
    """Store one file; a failure leaves nothing behind and is its result, not the request's."""
    name = _given_name(upload_file.filename)
    try:
        folder = settings.home / "uploads" / uuid.uuid4().hex
        target = folder / _disk_name(name)
        try:
            await _save(upload_file, target, name, engine.max_bytes)
            result = await _read_and_store(engine, target, name, user, cancel)
        finally:  # the knowledge base keeps the text; the copy on disk was only for the loader
            await asyncio.to_thread(shutil.rmtree, folder, True)
    except _FileFailed as failed:
        return UploadResult(file=name, status="failed", error=failed.message), failed
    view = await _view(engine, user, settings)
    document = view.out(result.document, await _fill_status(engine, [result.document]))
    return UploadResult(file=name, status=_STATUS.get(result.status, "added"), document=document), None


@router.post("", response_model=UploadResponse, summary="Add files to the knowledge base",
             responses={422: {"model": UploadFailed, "description": "no file was stored: why, and each file's result"}})
async def upload(files: Annotated[list[UploadFile], File(description="One or more files (txt, md, html, pdf, docx).")],
                 request: Request, agent: AgentDep, settings: SettingsDep, user: UserDep) -> UploadResponse | JSONResponse:
    """Each file is stored or refused on its own: 200 with every file's result when at least one was
    stored; when none was, the error (422, or 413 / 503 when every file failed that way) with them."""
    engine = _engine(agent)
    if len(files) > MAX_FILES:
        raise ApiError(413, "too_large", f"{len(files)} files in one upload: at most {MAX_FILES}")
    cancel = threading.Event()

    async def store_all() -> tuple[list[UploadResult], list[_FileFailed]]:
        results: list[UploadResult] = []
        failures: list[_FileFailed] = []
        for upload_file in files:
            result, failed = await _upload_one(upload_file, engine, settings, user, cancel)
            results.append(result)
            failures += [failed] if failed is not None else []
        return results, failures

    results, failures = await cancel_on_disconnect(request.receive, store_all(), on_disconnect=cancel.set)
    if len(failures) < len(results):
        return UploadResponse(files=results)
    statuses = {(f.status, f.code) for f in failures}
    status, code = statuses.pop() if len(statuses) == 1 else (422, "invalid_document")
    body = UploadFailed(error=ErrorDetail(code=code, message="; ".join(f.message for f in failures)),
                        request_id=request_id_of(request), files=results)
    return JSONResponse(body.model_dump(), status_code=status)


@router.get("", response_model=list[DocumentOut], summary="The documents the caller's searches see")
async def list_documents(agent: AgentDep, settings: SettingsDep, user: UserDep) -> list[DocumentOut]:
    """The caller's own documents and the shared ones (``shared: true``), newest first."""
    engine = _engine(agent)
    view = await _view(engine, user, settings)
    docs = await asyncio.to_thread(engine.list_documents, hidden=view.hidden)
    fill = await _fill_status(engine, docs)
    return [view.out(d, fill) for d in docs]


@router.get("/{document_id}", response_model=DocumentDetail, summary="One document the caller sees, with its text")
async def get_document(document_id: str, agent: AgentDep, settings: SettingsDep, user: UserDep) -> DocumentDetail:
    engine = _engine(agent)
    view = await _view(engine, user, settings)
    if not view.visible(document_id):
        raise not_found(f"document {shown(document_id)}")
    try:
        doc = await asyncio.to_thread(engine.get_document, document_id)
    except RagError:
        raise not_found(f"document {shown(document_id)}") from None
    return DocumentDetail(**view.out(doc, await _fill_status(engine, [doc])).model_dump(), text=doc.content or "")


@router.delete("/{document_id}", response_model=DeletedResponse, summary="Delete a document")
async def delete_document(document_id: str, agent: AgentDep, settings: SettingsDep, user: UserDep) -> DeletedResponse:
    """The caller's own document (gone once no other user holds it too), or a shared one for an
    admin (or anyone on a server without API keys)."""
    engine = _engine(agent)
    view = await _view(engine, user, settings)
    if not view.visible(document_id):
        raise not_found(f"document {shown(document_id)}")
    if not view.deletable(document_id):
        if not await asyncio.to_thread(_exists, engine, document_id):  # an unknown id is 404 for everyone
            raise not_found(f"document {shown(document_id)}")
        raise ApiError(403, "forbidden", "a shared document: deleting it needs an admin key (server.admins), "
                                         "or `saber docs rm` on the server")
    if view.shared(document_id):
        if not await asyncio.to_thread(engine.delete_document, document_id):
            raise not_found(f"document {shown(document_id)}")
    elif await asyncio.to_thread(engine.release, document_id, user):  # nobody else holds it
        await asyncio.to_thread(engine.delete_document, document_id)
    return DeletedResponse(deleted=True)
