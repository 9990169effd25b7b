"""The caller's tasks: list, inspect, cancel, resume, and follow their events."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request
from sse_starlette import EventSourceResponse

from saber.agent import Agent
from saber.agent.tasks import task_state, task_title
from saber.graph.checkpoint import Checkpoint
from saber.jsonsafe import to_jsonable
from saber.redact import redacted, redacted_value
from saber.runs.manager import TaskRun
from saber.runs.status import reported_status
from saber.server.deps import AgentDep, RunsDep, UserDep
from saber.server.errors import ERROR_RESPONSES, ApiError, not_found, shown
from saber.server.offloop import store_call
from saber.server.schemas import CancelResponse, NodeOut, TaskDetail, TaskSummary
from saber.server.sse import SSE_RESPONSE, last_event_id, stream_run

router = APIRouter(prefix="/api/tasks", tags=["tasks"], responses=ERROR_RESPONSES)


async def _checkpoint(agent: Agent, task_id: str, user: str) -> Checkpoint | None:
    store = agent.services.checkpoints
    if store is None:
        return None
    saved = await store_call(store, lambda: store.load(task_id))
    if saved is None or saved.meta.get("user_id") != user:
        return None
    return saved


@router.get("", response_model=list[TaskSummary], summary="The caller's tasks, oldest first")
async def list_tasks(agent: AgentDep, runs: RunsDep, user: UserDep) -> list[TaskSummary]:
    out: dict[str, TaskSummary] = {}
    checkpointed = await store_call(agent.services.checkpoints, lambda: agent.tasks(user_id=user, unfinished=False))
    records = await runs.records([t["task_id"] for t in checkpointed])
    for t in checkpointed:
        out[t["task_id"]] = TaskSummary(task_id=t["task_id"], status=reported_status(records.get(t["task_id"]), t["state"]),
                                        user_id=t["user_id"], query=t["query"], title=t.get("title"), live=False)
    mine = runs.runs_of(user)
    await runs.refresh(mine)
    for run in mine:
        known = out.get(run.task_id)
        out[run.task_id] = TaskSummary(task_id=run.task_id, status=reported_status(run.status, known.status if known else None),
                                       user_id=user, query=run.query, title=task_title(run.query), live=True)
    return list(out.values())


@router.get("/{task_id}", response_model=TaskDetail, summary="A task: status, plan and every node")
async def get_task(task_id: str, agent: AgentDep, runs: RunsDep, user: UserDep) -> TaskDetail:
    run = await runs.find(task_id, user)
    saved = await _checkpoint(agent, task_id, user)
    if run is None and saved is None:
        raise not_found(f"task {shown(task_id)}")
    served = await redacted_value([{"params": n.params, "result": to_jsonable(n.result), "error": n.error}
                                   for n in (saved.nodes if saved else [])])  # checkpoints written before redaction
    nodes = [NodeOut(id=n.id, type=n.type, tool=n.tool, agent=n.agent, params=s["params"], depends_on=n.depends_on,
                     race_group=n.race_group, status=n.status.value, attempts=n.attempts, duration_ms=n.duration_ms,
                     result=s["result"], error=s["error"]) for n, s in zip(saved.nodes if saved else [], served, strict=True)]
    summary: dict[str, Any] = run.summary() if run is not None else {}
    done = run.log.last("done") if run is not None else None
    status = reported_status(run.status if run is not None else None, task_state(saved) if saved is not None else None)
    query = await redacted(run.query if run else str(saved.meta.get("query") if saved else ""))
    return TaskDetail(task_id=task_id, status=status, user_id=user, query=query, title=task_title(query),
                      live=run is not None, mode=done.data.get("mode") if done else ("react" if saved else None),
                      answer=done.data.get("answer") if done else None, nodes=nodes,
                      events=len(run.log.events) if run else 0, error=summary.get("error"))


@router.post("/{task_id}/cancel", response_model=CancelResponse, summary="Cancel one of the caller's tasks")
async def cancel_task(task_id: str, runs: RunsDep, user: UserDep) -> CancelResponse:
    run = await runs.find(task_id, user)
    if run is None:
        raise not_found(f"running task {shown(task_id)}")
    cancelled = await runs.cancel(run)
    if cancelled:
        await asyncio.wait_for(runs.wait(run), timeout=10)
    return CancelResponse(task_id=task_id, cancelled=cancelled)


@router.post("/{task_id}/resume", response_class=EventSourceResponse, responses=SSE_RESPONSE,
             summary="Continue a react task from its checkpoint (SSE)")
async def resume_task(task_id: str, request: Request, agent: AgentDep, runs: RunsDep, user: UserDep) -> EventSourceResponse:
    if await _checkpoint(agent, task_id, user) is None:
        raise not_found(f"resumable task {shown(task_id)}")
    run = TaskRun(task_id=task_id, user_id=user, kind="resume", query="")  # its request: the checkpoint's
    try:
        await runs.start(run)
    except ValueError as exc:
        raise ApiError(409, "conflict", str(exc)) from None
    if run.log.events:  # in this process its start is logged already, naming the checkpoint's query
        run.query = str(run.log.events[0].data.get("query", ""))
    return stream_run(request, runs, run, owns_task=True)


@router.get("/{task_id}/events", response_class=EventSourceResponse, responses=SSE_RESPONSE,
            summary="Replay a task's events (after Last-Event-ID), then follow it live")
async def task_events(task_id: str, request: Request, runs: RunsDep, user: UserDep) -> EventSourceResponse:
    after = last_event_id(request)
    run = await runs.find(task_id, user)
    if run is None:
        raise not_found(f"event log of task {shown(task_id)}")
    return stream_run(request, runs, run, after=after)
