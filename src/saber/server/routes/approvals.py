"""Answering the questions a waiting step asks: only the task's own user may."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from saber.server.deps import AgentDep, UserDep
from saber.server.errors import ERROR_RESPONSES, ApiError, not_found, shown

router = APIRouter(prefix="/api", tags=["approvals"], responses=ERROR_RESPONSES)


class ApprovalAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    approve: StrictBool = Field(description="true runs the step; false fails it as denied by the user.")
    reason: str = Field("", max_length=2000, description="Told to the model (and shown) with a denial.")
    for_task: StrictBool = Field(False, description="Approve this tool for the rest of the task.")


class ApprovalOut(BaseModel):
    task_id: str
    node_id: str
    tool: str
    params: dict[str, Any]
    reason: str
    status: str
    decided_by: str = ""
    decision_reason: str = ""


@router.get("/approvals", response_model=list[ApprovalOut], summary="The caller's questions waiting for an answer")
async def pending(agent: AgentDep, user: UserDep) -> list[ApprovalOut]:
    return [ApprovalOut(**q.to_dict()) for q in await agent.approvals.pending(user_id=user)]


@router.post("/tasks/{task_id}/approvals/{node_id}", response_model=ApprovalOut,
             summary="Approve or deny a step that waits for the caller's yes")
async def answer(task_id: str, node_id: str, body: ApprovalAnswer, agent: AgentDep, user: UserDep) -> ApprovalOut:
    question = await agent.approvals.question(task_id, node_id)
    if question is None or question.user_id != user:
        raise not_found(f"question for step {shown(node_id)} of task {shown(task_id)}")
    if question.status != "pending":
        raise ApiError(409, "conflict", f"step {node_id} of task {task_id} was already {question.status}")
    decided = await agent.approvals.decide(task_id, node_id, approve=body.approve, by=user, reason=body.reason,
                                           for_task=body.for_task)
    if decided is None:
        raise ApiError(409, "conflict", f"step {node_id} of task {task_id} was answered meanwhile")
    return ApprovalOut(**decided.to_dict())
