"""Checkpoint writes of a running graph (whole graph, changed nodes, final status) and that status."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from saber.events import Error, Event
from saber.graph.checkpoint.base import CheckpointStore, TaskClaimedError, TaskStatus
from saber.graph.node import Node, NodeStatus
from saber.graph.result import RunStatus
from saber.graph.state import GraphState
from saber.outages import dependency_down, retrying

log = logging.getLogger(__name__)

Emit = Callable[[Event], Awaitable[None]]

async def durably(store: CheckpointStore, task_id: str, write: Callable[[], Awaitable[Any]]) -> Any:
    """Run a checkpoint write to its end (``finish_anyway``), again with backoff while the store is
    down (``saber.outages``), for at most ``store.outage_seconds``: the run is paused meanwhile
    (its scheduler waits here, so nothing new starts). Any other failure, or a longer outage, is raised."""
    try:
        return await finish_anyway(write())
    except Exception as exc:
        if not dependency_down(exc):
            raise
        log.warning("task %s: the checkpoint store cannot be reached (%s); the run waits for it", task_id, exc)
    async for attempt in retrying(timeout=store.outage_seconds, wait_initial=0.25, wait_max=5.0):
        with attempt:
            return await finish_anyway(write())
    raise AssertionError("unreachable: stamina raises the last error when it gives up")


async def save_graph(
    store: CheckpointStore, task_id: str, nodes: Sequence[Node], *, config: Mapping[str, Any], replans: int,
    meta: Mapping[str, Any], owner: str | None, emit: Emit, lost: Callable[[TaskClaimedError], None],
) -> bool:
    """Write the whole graph as a running task; a failure is logged and emitted, not raised (``lost``
    is called first when another live process holds the task). Returns whether it was written."""
    try:
        await durably(store, task_id, lambda: store.save_graph(task_id, nodes, config=config, status="running",
                                                        replans=replans, meta=meta, owner=owner))
    except TaskClaimedError as exc:
        lost(exc)
        await emit(Error(message=str(exc), where="checkpoint"))
        return False
    except Exception as exc:
        log.exception("checkpoint of task %s failed", task_id)
        await emit(Error(message=_failed(task_id, exc), where="checkpoint"))
        return False
    return True


async def save_nodes(
    store: CheckpointStore, task_id: str, nodes: Sequence[Node], *, replans: int, owner: str | None,
    lost: Callable[[TaskClaimedError], None],
) -> Error | None:
    """Write the changed nodes; returns the error event to announce if that failed (``lost`` is
    called first when another process holds the task now)."""
    try:
        await durably(store, task_id, lambda: store.save_nodes(task_id, nodes, replans=replans, owner=owner))
    except TaskClaimedError as exc:
        lost(exc)
        return Error(message=str(exc), where="checkpoint")
    except Exception as exc:
        log.exception("checkpoint of task %s failed", task_id)
        return Error(message=_failed(task_id, exc), where="checkpoint")
    return None


async def finish_anyway(work: Awaitable[Any]) -> Any:
    """Await a checkpoint write to its end: it runs in a worker thread, and a cancel must not let a
    later write (say "cancelled") land before an earlier one still under way (say "running").
    A cancel that arrives meanwhile is re-raised once the write is done."""
    task = asyncio.ensure_future(work)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return task.result()


def _failed(task_id: str, exc: Exception) -> str:
    return (f"checkpoint failed: {exc}; the run stopped so that a crash cannot lose work "
            f"(resume task {task_id} once the store works)")


async def answered(store: CheckpointStore, task_id: str, status: RunStatus) -> None:
    """The answer of a run checkpointed as "answering" is written: record how the run ended.
    A failure is logged (the task then stays resumable, and a resume writes the answer again)."""
    try:
        await durably(store, task_id, lambda: store.set_status(task_id, status))
    except Exception:
        log.exception("recording the end of task %s failed", task_id)


async def set_status(store: CheckpointStore, task_id: str, status: TaskStatus, *, owner: str | None,
                     emit: Emit) -> None:
    """Record how the run ended (which ends ``owner``'s lease); a failure is logged and emitted."""
    try:
        await durably(store, task_id, lambda: store.set_status(task_id, status, owner=owner))
    except TaskClaimedError as exc:
        log.error("%s; its status is left to the new owner", exc)
        await emit(Error(message=str(exc), where="checkpoint"))
    except Exception as exc:
        log.exception("checkpoint of task %s failed", task_id)
        await emit(Error(message=f"checkpoint failed: {exc}", where="checkpoint"))


def run_status(nodes: Iterable[Node], state: GraphState, *, cancelled: bool) -> RunStatus:
    """How a finished run ended: cancelled, failed (a node failed, or was skipped for a failure) or done."""
    if cancelled:
        return "cancelled"
    unfinished = (NodeStatus.FAILED, NodeStatus.PENDING, NodeStatus.RUNNING)  # the last two: never "done"
    if any(n.status in unfinished or state.failure_skipped(n) for n in nodes):
        return "failed"
    return "done"
