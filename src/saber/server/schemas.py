"""Request and response bodies of the API (pydantic at the edge: types checked, fields named)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, StrictBool

from saber.runs.request import Mode as Mode  # the routes take it from here
from saber.runs.request import RunInput
from saber.server.errors import ErrorBody


class ChatRequest(RunInput):
    """A chat request's body: the ``RunInput`` a run carries (``run_request``), and how this HTTP
    request runs it."""

    message: str = Field(min_length=1, description="The query.")
    task_id: str | None = Field(None, min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._:-]+$",
                                description="A new task id chosen by the caller (default: a random one).")
    detach: StrictBool = Field(False, description="Stream only: the task keeps running when the client disconnects.")
    user_id: str | None = Field(None, min_length=1, max_length=128,
                                description="Local mode only: with API keys the key decides the user.")


class EventOut(BaseModel):
    id: int
    type: str
    data: dict[str, Any]


class ChatResponse(BaseModel):
    answer: str
    mode: str
    task_id: str
    usage: dict[str, int]
    model: str | None
    interrupted: bool
    answer_template: bool = Field(False, description="The answer is the plan's answer template (the planner's "
                                  "words, written with the plan) with the steps' results put in: no model call "
                                  "read the results.")
    events: list[EventOut]


class TaskSummary(BaseModel):
    task_id: str
    status: str = Field(description="queued (distributed mode: no worker has taken it yet), running, recovering "
                                    "(distributed mode: its worker is gone, another takes it over), done, cancelled "
                                    "or failed; a react task known only from its checkpoint may also be answering, "
                                    "or interrupted (its process died: resume it).")
    user_id: str | None = None
    query: str | None = None
    title: str | None = Field(None, description="The query as plain text on one line, Markdown marks removed "
                                                "(\"Research **Oslo**\" → \"Research Oslo\"): what a task list shows.")
    live: bool = Field(description="Its events can be followed at /api/tasks/{id}/events.")


class NodeOut(BaseModel):
    id: str
    type: str
    tool: str | None = None
    agent: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    depends_on: list[str] = Field(default_factory=list)
    race_group: str | None = None
    status: str
    attempts: int
    duration_ms: float
    result: Any = None
    error: str | None = None


class TaskDetail(TaskSummary):
    mode: str | None = None
    answer: str | None = None
    error: str | None = Field(None, description="Why the run failed before it could run (a malformed queued request).")
    nodes: list[NodeOut] = Field(default_factory=list, description="The plan of a react task, node by node.")
    events: int = Field(0, description="Events in the live log (0 when only the checkpoint is known).")


class CancelResponse(BaseModel):
    task_id: str
    cancelled: bool


class VectorFill(BaseModel):
    """How a pending document's vectors are coming along (the server's vector filler)."""

    state: Literal["filling", "failing", "idle", "stopped"] = Field(
        description="filling (being embedded), failing (the last attempt failed; retried), idle (waiting for "
                    "the next look) or stopped (no filler runs in this server and no failure is known).")
    error: str | None = Field(None, description="Why the last attempt failed, one line naming the embedder "
                                                "and its endpoint (never a credential).")
    retry_in_s: float | None = Field(None, description="Seconds until the server tries again.")
    failed_at: str | None = Field(None, description="When the last attempt failed (ISO 8601).")


class DocumentOut(BaseModel):
    id: str
    title: str
    source: str = ""
    doc_type: str = ""
    chunks: int = 0
    indexed: bool = False
    created_at: str | None = None
    embedded_chunks: int = Field(0, description="Chunks with their vector; the rest are keyword-searchable and "
                                                "being embedded in the background.")
    search: str = Field("none", description="none (not indexed), keyword (vectors being filled) or hybrid.")
    vectors: VectorFill | None = Field(None, description="While search is keyword: how the vector fill is going "
                                                         "(null otherwise).")
    shared: bool = Field(False, description="Not the caller's own: a shared document (added with saber ingest), "
                                            "which every user's searches see.")
    deletable: bool = Field(True, description="The caller may delete it: its own, or shared and the caller an admin "
                                              "(any caller on a server without API keys).")


class DocumentDetail(DocumentOut):
    text: str = Field("", description="The stored text, exactly as indexed.")


UploadStatus = Literal["added", "updated", "unchanged", "failed"]


class UploadResult(BaseModel):
    """What an upload did with one of its files."""

    file: str = Field(description="The file's name as uploaded.")
    status: UploadStatus = Field(description="added (a new document), updated (a new version of the caller's "
                                             "upload of that name), unchanged (the same text is stored already) or "
                                             "failed (see error).")
    error: str | None = Field(default=None, description="Why the file was not stored (failed only).")
    document: DocumentOut | None = Field(default=None, description="The stored document (null when failed).")


class UploadResponse(BaseModel):
    files: list[UploadResult] = Field(description="One result per uploaded file, in order.")


class UploadFailed(ErrorBody):
    """No file of the upload was stored: the error names each file's problem (a request that is not a
    valid upload at all has no ``files``)."""

    files: list[UploadResult] = Field(default_factory=list)


class DeletedResponse(BaseModel):
    deleted: bool


class MemoryItem(BaseModel):
    id: int
    text: str
    importance: float | None = None


class MemoryResponse(BaseModel):
    user_id: str
    history: list[dict[str, str]]
    preferences: dict[str, str]
    memories: list[MemoryItem]


class ToolOut(BaseModel):
    name: str
    description: str
    parameters: list[dict[str, Any]]


class StatusResponse(BaseModel):
    model: str | None
    stores: dict[str, str]
    documents: int
    chunks: int
    tools: list[str]
    running_tasks: int
    auth: bool
    mcp: list[dict[str, Any]] = Field(default_factory=list, description="Each MCP server: state, error, tools.")
    notes: list[str] = Field(default_factory=list, description="What is off and why (system tools, sandbox).")
    vectors: VectorFill | None = Field(None, description="How the knowledge base's pending vectors are coming "
                                       "along (None when none are pending).")


class Health(BaseModel):
    status: str
