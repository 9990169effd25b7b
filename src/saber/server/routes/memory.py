"""The caller's own history, preferences and memories: see them, and forget them."""

from __future__ import annotations

from fastapi import APIRouter

from saber.agent.memory import MemoryService
from saber.server.deps import AgentDep, UserDep
from saber.server.errors import ERROR_RESPONSES, ApiError
from saber.server.schemas import DeletedResponse, MemoryItem, MemoryResponse

router = APIRouter(prefix="/api/memory", tags=["memory"], responses=ERROR_RESPONSES)


def _memory(agent: AgentDep) -> MemoryService:
    memory = agent.services.memory
    if memory is None:
        raise ApiError(503, "unavailable", "this agent keeps no memory")
    return memory


@router.get("", response_model=MemoryResponse, summary="What Saber keeps about the caller")
async def get_memory(agent: AgentDep, user: UserDep) -> MemoryResponse:
    memory = _memory(agent)
    history = await memory.history(user, 1000)
    return MemoryResponse(user_id=user, history=[{"role": m.role, "content": m.content} for m in history],
                          preferences=await memory.preferences(user),
                          memories=[MemoryItem(id=m.id, text=m.text, importance=m.importance)
                                    for m in await memory.memories(user)])


@router.delete("", response_model=DeletedResponse, summary="Forget the caller's history, preferences and memories")
async def forget(agent: AgentDep, user: UserDep) -> DeletedResponse:
    await _memory(agent).forget_user(user)
    return DeletedResponse(deleted=True)
