"""Health, readiness, status and the tool list."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request

from saber.jsonsafe import to_jsonable
from saber.llm.nomodel import is_no_model
from saber.server.auth import authenticate
from saber.server.deps import AgentDep, RunsDep, SettingsDep, UserDep
from saber.server.errors import ERROR_RESPONSES, ApiError
from saber.server.schemas import Health, StatusResponse, ToolOut, VectorFill

router = APIRouter(tags=["status"])


@router.get("/healthz", response_model=Health, summary="The process is up")
async def healthz() -> Health:
    return Health(status="ok")


@router.get("/readyz", response_model=Health, summary="The agent is built and new requests are accepted",
            responses={503: ERROR_RESPONSES[503]})
async def readyz(request: Request) -> Health:
    runs = getattr(request.app.state, "runs", None)
    if getattr(request.app.state, "agent", None) is None or runs is None:
        raise ApiError(503, "not_ready", "the agent is still starting")
    if runs.closing:
        raise ApiError(503, "shutting_down", "the server is shutting down")
    return Health(status="ready")


@router.get("/api/status", response_model=StatusResponse, responses=ERROR_RESPONSES, tags=["status"])
async def status(request: Request, agent: AgentDep, runs: RunsDep, settings: SettingsDep) -> StatusResponse:
    authenticate(request)
    engine = agent.services.knowledge
    documents = chunks = 0
    vectors: VectorFill | None = None
    if engine is not None:
        documents = len(await asyncio.to_thread(engine.list_documents))
        chunks = await asyncio.to_thread(engine.store.chunk_count)
        if await asyncio.to_thread(engine.pending_count) > 0:
            vectors = VectorFill(**(await asyncio.to_thread(engine.vector_status)).to_dict())
    stores = {"database": "postgresql" if settings.database.url else "sqlite",
              "knowledge": type(engine.store).__name__ if engine is not None else "none",
              "checkpoints": type(agent.services.checkpoints).__name__ if agent.services.checkpoints else "none"}
    return StatusResponse(model=None if is_no_model(agent.model) else agent.model.name, stores=stores,
                          documents=documents, chunks=chunks, tools=sorted(agent.registry.snapshot()),
                          running_tasks=len(runs.running()), auth=request.app.state.keys.enabled,
                          mcp=to_jsonable(agent.mcp.list()), notes=list(agent.system_notes), vectors=vectors)


@router.get("/api/tools", response_model=list[ToolOut], responses=ERROR_RESPONSES, tags=["status"])
async def tools(agent: AgentDep, user: UserDep) -> list[ToolOut]:
    return [ToolOut(**to_jsonable(t.to_dict())) for t in agent.registry.snapshot().values()]
