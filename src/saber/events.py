"""Events: every step of a request, as small tagged dataclasses, and the in-process bus.

The ``type`` tag of each event is its SSE ``event:`` name and ``data`` its JSON ``data:``. The
CLI renders them, the server streams them, tests assert on them.

Code that runs inside a request (a tool such as ``rag_search``) reaches that request's stream
through ``emit()``: the runtime installs the request's handler with ``emitting_to()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeAlias

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class _Event:
    type: str

    @property
    def data(self) -> dict[str, Any]:
        """The JSON payload: every field but the tag."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "type"}

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "data": self.data}


@dataclass(frozen=True, kw_only=True)
class Start(_Event):
    type: Literal["start"] = "start"
    task_id: str
    query: str
    user_id: str


@dataclass(frozen=True, kw_only=True)
class Route(_Event):
    type: Literal["route"] = "route"
    mode: str
    rule: str
    """Which routing rule fired, e.g. ``"keywords:react(weather+time)"``."""
    tools: list[str] = field(default_factory=list)
    evidence: dict[str, Any] | None = None
    """Why the knowledge base was (not) chosen: best passage relevance vs the threshold."""


@dataclass(frozen=True, kw_only=True)
class Memory(_Event):
    type: Literal["memory"] = "memory"
    action: str
    """recalled | stored | rejected | preference"""
    content: str = ""
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class Token(_Event):
    type: Literal["token"] = "token"
    content: str


@dataclass(frozen=True, kw_only=True)
class ToolCallEvent(_Event):
    type: Literal["tool_call"] = "tool_call"
    tool_name: str
    params: dict[str, Any]
    tool_result: Any = None
    error: str | None = None
    duration_ms: float = 0.0


@dataclass(frozen=True, kw_only=True)
class RagResult(_Event):
    type: Literal["rag_result"] = "rag_result"
    query: str
    hits: list[dict[str, Any]]
    """Each: document_id, title, chunk, score, score_kind."""


@dataclass(frozen=True, kw_only=True)
class Plan(_Event):
    type: Literal["plan"] = "plan"
    format: str
    nodes: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)
    source: str = "model"
    """model | rules"""
    tools: list[str] | None = None
    """The tools the planner was shown, when it was not shown them all (None: every tool)."""
    truncated: str | None = None
    """Why the plan is not all the model wrote or meant, in words (its output was cut by the
    repetition guard or a token limit, the stream broke, it had more nodes than
    ``planner_max_nodes``); None when the plan is whole."""
    dropped_nodes: int = 0
    """How many nodes the cut cost: begun but unfinished, past the cap, or written but not run."""
    answer: str | None = None
    """The reply the planner wrote ahead, ``${id}`` where a step's result goes: the answer when
    every step succeeds (``done`` then has ``answer_template``); None when it wrote none."""


@dataclass(frozen=True, kw_only=True)
class GraphReady(_Event):
    type: Literal["graph_ready"] = "graph_ready"
    nodes: list[dict[str, Any]]
    levels: list[list[str]]


@dataclass(frozen=True, kw_only=True)
class NodeAdded(_Event):
    """A node joined the running graph while the planner was still writing the plan (streamed planning)."""

    type: Literal["node_added"] = "node_added"
    node: dict[str, Any]
    replaces: bool = False
    """The final plan changed this node before it started: the new version replaces the drawn one."""


@dataclass(frozen=True, kw_only=True)
class NodeStart(_Event):
    type: Literal["node_start"] = "node_start"
    id: str
    tool: str
    attempt: int = 1


@dataclass(frozen=True, kw_only=True)
class NodeDone(_Event):
    type: Literal["node_done"] = "node_done"
    id: str
    tool: str
    status: str
    duration_ms: float
    attempts: int = 0
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class RaceWon(_Event):
    type: Literal["race_won"] = "race_won"
    race_group: str
    winner: str
    tool: str
    losers: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class Step(_Event):
    """A ReAct-style trace line. ``kind`` travels as ``type`` in ``data`` (thought|action|observation)."""

    type: Literal["step"] = "step"
    kind: Literal["thought", "action", "observation"]
    content: str
    tool: str | None = None
    params: dict[str, Any] | None = None
    node_id: str | None = None

    @property
    def data(self) -> dict[str, Any]:
        return {"type": self.kind, "content": self.content, "tool": self.tool, "params": self.params, "node_id": self.node_id}


@dataclass(frozen=True, kw_only=True)
class Replan(_Event):
    type: Literal["replan"] = "replan"
    reason: str
    added: list[str]
    used: int
    max: int


@dataclass(frozen=True, kw_only=True)
class ApprovalRequired(_Event):
    """A step waits for a person's yes (``saber approve``, the API, the web page) before it runs."""

    type: Literal["approval_required"] = "approval_required"
    task_id: str
    node_id: str
    tool: str
    params: dict[str, Any]
    reason: str


@dataclass(frozen=True, kw_only=True)
class ApprovalGiven(_Event):
    type: Literal["approval_given"] = "approval_given"
    task_id: str
    node_id: str
    approved: bool
    by: str
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class Error(_Event):
    type: Literal["error"] = "error"
    message: str
    where: str


@dataclass(frozen=True, kw_only=True)
class Done(_Event):
    type: Literal["done"] = "done"
    answer: str
    mode: str
    task_id: str
    usage: dict[str, int] = field(default_factory=dict)
    model: str | None = None
    """The model that wrote the answer; None when it was written without a language model."""
    interrupted: bool = False
    answer_template: bool = False
    """The answer is the plan's answer template (the planner model's words, written with the plan)
    with the steps' results put in: no model call read the results."""


Event: TypeAlias = (
    Start | Route | Memory | Token | ToolCallEvent | RagResult | Plan | GraphReady | NodeAdded | NodeStart | NodeDone
    | RaceWon | Step | Replan | ApprovalRequired | ApprovalGiven | Error | Done
)
EventHandler: TypeAlias = Callable[[Event], Any]
"""Takes an event; may return an awaitable, which the emitter awaits."""

_current: contextvars.ContextVar[EventHandler | None] = contextvars.ContextVar("saber_event_handler", default=None)


@contextlib.contextmanager
def emitting_to(handler: EventHandler | None) -> Iterator[None]:
    """Route ``emit()`` calls made in this context (and tasks started from it) to ``handler``."""
    token = _current.set(handler)
    try:
        yield
    finally:
        _current.reset(token)


def emit(event: Event) -> None:
    """Hand ``event`` to the current request's handler; a no-op outside a request.

    A handler that returns an awaitable is scheduled, not awaited, so ``emit`` can be called
    from sync code and from worker threads alike.
    """
    handler = _current.get()
    if handler is None:
        return
    result = handler(event)
    if inspect.isawaitable(result):
        with contextlib.suppress(RuntimeError):
            task = asyncio.ensure_future(result)
            _emitting.add(task)
            task.add_done_callback(_emitting.discard)


_emitting: set[asyncio.Future[Any]] = set()


BusHandler: TypeAlias = Callable[[str, dict[str, Any]], Awaitable[None] | None]


def _is_async_handler(handler: Any) -> bool:
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(type(handler).__call__)


class EventBus:
    """In-process publish/subscribe by topic (``agent.chat``...). A failing subscriber is logged,
    never raised into the publisher; async subscribers are tracked so ``drain()`` can await them."""

    _WILDCARD: ClassVar[str] = "*"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subs: dict[str, list[BusHandler]] = {}
        self._pending: set[asyncio.Future[None]] = set()
        self._tail: asyncio.Future[None] | None = None

    def subscribe(self, topic: str, handler: BusHandler) -> Callable[[], None]:
        """Call ``handler(topic, payload)`` for each publish on ``topic`` ("*" for all). Returns an unsubscribe."""
        with self._lock:
            self._subs.setdefault(topic, []).append(handler)

        def unsubscribe() -> None:
            with self._lock, contextlib.suppress(ValueError):
                self._subs.get(topic, []).remove(handler)

        return unsubscribe

    def publish(self, topic: str, payload: dict[str, Any]) -> None:
        with self._lock:
            handlers = list(self._subs.get(topic, [])) + list(self._subs.get(self._WILDCARD, []))
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        for handler in handlers:
            if loop is not None and not _is_async_handler(handler):
                self._run_in_order(topic, payload, handler)
                continue
            try:
                result = handler(topic, payload)
            except Exception:
                log.exception("event bus subscriber failed on %s", topic)
                continue
            if inspect.isawaitable(result):
                self._track(asyncio.ensure_future(self._guard(topic, result)))

    def _run_in_order(self, topic: str, payload: dict[str, Any], handler: BusHandler) -> None:
        """A plain function may block (a disk, a database): it runs in a worker thread, so it never
        stalls the event loop, one call after another in publish order; an awaitable it returns
        is awaited on the loop."""
        previous = self._tail

        async def run() -> None:
            if previous is not None:
                await asyncio.gather(previous, return_exceptions=True)
            result = await asyncio.to_thread(handler, topic, payload)
            if inspect.isawaitable(result):
                await result

        task = asyncio.ensure_future(self._guard(topic, run()))
        self._tail = task
        self._track(task)

    def _track(self, task: asyncio.Future[None]) -> None:
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def drain(self) -> None:
        """Wait for every async subscriber started so far."""
        while self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)

    @staticmethod
    async def _guard(topic: str, awaitable: Awaitable[Any]) -> None:
        try:
            await awaitable
        except Exception:
            log.exception("event bus subscriber failed on %s", topic)
