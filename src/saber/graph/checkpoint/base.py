"""The checkpoint store interface: a task's graph state, saved as it runs, loadable after a crash."""

from __future__ import annotations

import datetime as dt
import functools
import json
import os
import socket
import uuid
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from saber.graph.node import Node
from saber.graph.tool_output import jsonable
from saber.redact import redact, redact_value

TaskStatus = Literal["running", "answering", "done", "failed", "cancelled"]
"""answering: the graph finished and the caller is writing the answer (``GraphRuntime(answer_follows=True)``);
a task left in it (killed, cancelled) is resumed by regenerating the answer."""

DEFAULT_LEASE_SECONDS = 15.0
"""How long a running task stays claimed without a renewal. The runtime renews it every third
of that, so a process that vanished without a trace (another host, a frozen VM) frees its
tasks within this time; a killed process on the same host frees them at once (its pid is gone)."""


DEFAULT_OUTAGE_SECONDS = 120.0
"""A database restart (or a failover) is waited out: the run pauses, nothing new starts, and when
the write goes through the run goes on; an outage longer than this stops the run (resumable)."""


class TaskClaimedError(RuntimeError):
    """The task is running in another live process (or another process took it over from us)."""

    def __init__(self, message: str, *, task_id: str, owner: str | None, lease_until: float | None) -> None:
        super().__init__(message)
        self.task_id = task_id
        self.owner = owner
        self.lease_until = lease_until

    @classmethod
    def running_elsewhere(cls, task_id: str, owner: str | None, lease_until: float | None) -> TaskClaimedError:
        return cls(f"task {task_id} is running in another process (lease until {_when(lease_until)}, owner {owner})",
                   task_id=task_id, owner=owner, lease_until=lease_until)

    @classmethod
    def lost(cls, task_id: str, owner: str) -> TaskClaimedError:
        return cls(f"task {task_id} was taken over by another process: this one ({owner}) no longer owns it",
                   task_id=task_id, owner=owner, lease_until=None)


@dataclass(frozen=True, kw_only=True)
class Checkpoint:
    """A task as last saved."""

    task_id: str
    status: TaskStatus
    nodes: list[Node]
    """In graph order, with status, result, error and attempts as of the last save."""
    config: dict[str, Any] = field(default_factory=dict)
    replans: int = 0
    meta: dict[str, Any] = field(default_factory=dict)
    owner: str | None = None
    """The process that runs (or last ran) the task: ``host:pid:random``."""
    lease_until: float | None = None
    """Epoch seconds until which ``owner`` holds the task while it is running."""


class CheckpointStore(ABC):
    """Where task state lives. The runtime calls ``save_graph`` when a run starts (and after a
    replan adds nodes), ``save_nodes`` with every batch of finished nodes *before* their
    dependents start, and ``set_status`` at the end. Each call is durable when it returns.

    Ownership: a running task is leased to one process (``owner``) for ``lease_seconds``;
    ``save_graph`` and ``set_status`` with ``owner=`` take or renew it, the runtime calls ``renew``
    as a heartbeat, and every write made with ``owner=`` fails with ``TaskClaimedError`` once
    another process has taken the task over. ``claim``
    (what resuming does) succeeds only if the task is not running, its lease expired, or its
    owner's process is gone."""

    lease_seconds: float = DEFAULT_LEASE_SECONDS
    outage_seconds: float = DEFAULT_OUTAGE_SECONDS
    """How long a running task waits, paused, for a write that fails because the store cannot be
    reached (``saber.outages``), trying again with backoff, before the run stops."""

    @abstractmethod
    async def save_graph(
        self, task_id: str, nodes: Sequence[Node], *, config: Mapping[str, Any], status: TaskStatus,
        replans: int = 0, meta: Mapping[str, Any] | None = None, owner: str | None = None,
    ) -> None:
        """Write the whole task (replacing any earlier state of it); ``owner`` takes the lease."""

    @abstractmethod
    async def save_nodes(
        self, task_id: str, nodes: Sequence[Node], *, replans: int | None = None, owner: str | None = None,
    ) -> None:
        """Update the state of these nodes (already part of the saved graph)."""

    @abstractmethod
    async def set_status(self, task_id: str, status: TaskStatus, *, owner: str | None = None) -> None:
        """Any status but "running" also ends ``owner``'s lease."""

    @abstractmethod
    async def claim(self, task_id: str, owner: str) -> None:
        """Take the task over for ``owner``, atomically. Raises ``TaskClaimedError`` while another
        live process holds its lease, LookupError for an unknown task."""

    @abstractmethod
    async def renew(self, task_id: str, owner: str) -> bool:
        """Extend ``owner``'s lease; False if the task is no longer ``owner``'s."""

    @abstractmethod
    async def load(self, task_id: str) -> Checkpoint | None:
        """The task as last saved, or None if the store has never seen it."""

    @abstractmethod
    async def list_tasks(self, *, status: TaskStatus | None = None) -> list[str]:
        """Task ids, oldest first; e.g. ``status="running"`` finds tasks to resume after a restart."""

    @abstractmethod
    async def delete(self, task_id: str) -> None: ...

    @abstractmethod
    async def close(self) -> None: ...

    async def __aenter__(self) -> CheckpointStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


# -- helpers shared by the implementations ------------------------------------------------------

def node_spec(node: Node) -> str:
    """The part of a node that does not change while it runs, as JSON, secrets redacted (a resumed
    node that needs one gets ``[redacted]``: the secret is never on disk)."""
    return _dumps({
        "type": node.type, "tool": node.tool, "agent": node.agent, "goal": redact(node.goal),
        "params": redact_value(jsonable(node.params)), "depends_on": node.depends_on, "race_group": node.race_group,
    })


def node_state(node: Node) -> tuple[str, str, str | None, int, float]:
    """(status, result JSON, error, attempts, duration_ms), secrets redacted."""
    error = redact(node.error) if node.error else node.error
    return node.status.value, _dumps(redact_value(jsonable(node.result))), error, node.attempts, node.duration_ms


def meta_json(meta: Mapping[str, Any]) -> str:
    """A task's meta as JSON, secrets redacted."""
    return json.dumps(redact_value(jsonable(dict(meta))), ensure_ascii=False)


def node_from_row(node_id: str, spec: str, status: str, result: str, error: str | None,
                  attempts: int, duration_ms: float) -> Node:
    data = json.loads(spec)
    data.update(id=node_id, status=status, result=json.loads(result), error=error,
                attempts=attempts, duration_ms=duration_ms)
    return Node.from_dict(data)


def _dumps(value: Any) -> str:
    # Results that JSON cannot hold are stored as their text: a resumed task sees that text.
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):  # tuple keys, a cycle: stored as its JSON-safe form
        return json.dumps(jsonable(value), ensure_ascii=False)


# -- ownership ------------------------------------------------------------------------------------

@functools.cache
def _host() -> str:
    """This host, and the pid namespace (containers on one host may share a hostname)."""
    try:
        namespace = f"/{os.stat('/proc/self/ns/pid').st_ino}"
    except OSError:
        namespace = ""
    return f"{socket.gethostname()}{namespace}"


def new_owner() -> str:
    """A fresh owner id for one run: ``host:pid:random``."""
    return f"{_host()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def owner_gone(owner: str | None) -> bool:
    """True only when ``owner`` is certainly dead: a process of this host whose pid has exited.
    An owner on another host is trusted until its lease expires."""
    if not owner:
        return True
    parts = owner.rsplit(":", 2)
    if len(parts) != 3 or parts[0] != _host() or not parts[1].isdigit():
        return False
    pid = int(parts[1])
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # exists, owned by someone else
        return False
    try:  # a killed process its parent has not reaped yet is a zombie: gone all the same
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rpartition(")")[2].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def claimable(status: str, owner: str | None, lease_live: bool, new: str) -> bool:
    """The claim rule both stores apply inside their transaction."""
    return status != "running" or owner is None or owner == new or not lease_live or owner_gone(owner)


def _when(epoch: float | None) -> str:
    if epoch is None:
        return "unknown"
    return dt.datetime.fromtimestamp(epoch, dt.UTC).isoformat(timespec="seconds")
