"""``Agent``: takes a query, decides how to answer, runs it, and streams typed events until ``done``.

Every request gets its own task id, cancel handle and state (a ``Turn``); history, preferences
and memories are keyed by user. Work that can wait (model-based preference and memory
extraction) runs in the background: it never delays ``done`` and never fails the request, and
``aclose()`` waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.util
import logging
import uuid
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from saber.agent.context import Turn
from saber.agent.memory import MemoryService
from saber.agent.memory.cues import ModelExtraction
from saber.agent.modes.tool import ask_for_arguments, run_tool
from saber.agent.modes.tool_args import choose_tool_call
from saber.agent.prompts import language_of
from saber.agent.redaction import checked_memory_text, off_loop_if_long
from saber.agent.router import (
    KnowledgeEvidence,
    Mode,
    RouteDecision,
    RouteOptions,
    needs_knowledge_evidence,
    route,
)
from saber.agent.scope import within_request
from saber.agent.services import Services, SubAgentSpec
from saber.agent.tasks import check_new_task_id, list_tasks, resumable_task
from saber.agent.validation import (
    check_query,
    check_selected_tools,
    check_task_id,
    check_user_id,
    limit_answer,
)
from saber.approvals import ApprovalBroker
from saber.config import Settings
from saber.events import Done, Error, Event, EventBus, Memory, Route, Start, Token
from saber.graph.approval import approving_with
from saber.graph.checkpoint import CheckpointStore, SQLiteCheckpointStore
from saber.llm.base import ChatModel
from saber.llm.factory import model_from_settings
from saber.llm.guarded import GuardedModel
from saber.llm.limits import limits_from_settings
from saber.llm.nomodel import is_no_model
from saber.llm.traced import TracedModel
from saber.llm.types import Message
from saber.mcp.manager import MCPManager
from saber.rag.documents import EmbeddingError
from saber.rag.factory import engine_from_settings
from saber.rag.scope import knowledge_scope
from saber.rag.tools import knowledge_tools
from saber.redact import redacted
from saber.tools.base import Tool
from saber.tools.builtin import builtin_tools
from saber.tools.builtin.places import warm_offline
from saber.tools.index import ToolIndex
from saber.tools.modules import configured_tools
from saber.tools.registry import ToolRegistry
from saber.tools.system import system_tools

if TYPE_CHECKING:
    from saber.agent.subagents import SubAgentBase
    from saber.rag.engine import RagEngine

log = logging.getLogger(__name__)

MINTED_KEPT = 10_000
"""Unused ids of ``Agent.new_task_id`` remembered (a request refused before it started leaves one)."""


@dataclass(kw_only=True)
class Answer:
    """What ``Agent.ask`` returns: the answer and every event of the request."""

    answer: str
    mode: str
    task_id: str
    usage: dict[str, int]
    model: str | None
    interrupted: bool
    events: list[Event] = field(default_factory=list)

    def of_type(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.type == kind]


@dataclass
class _Request:
    user_id: str
    task: asyncio.Task[None]


class Agent:
    """The orchestrator: routes each query to chat, tool, rag or react mode, runs it, and streams
    its events.

    ``Agent(settings)`` builds everything it is not given (model, tools, knowledge base, memory,
    checkpoint store, sub-agents, MCP servers) from ``Settings``. Use it as
    ``async with Agent(...) as agent:`` so MCP servers are connected first and everything is
    closed at the end; ``agent.stream(query)`` yields events as they happen, ``agent.ask(query)``
    waits for the ``Answer``. One agent serves many users and many concurrent requests.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        model: ChatModel | None = None,
        tools: Iterable[Tool] = (),
        builtin: bool = True,
        knowledge: RagEngine | None = None,
        memory: MemoryService | None = None,
        checkpoints: CheckpointStore | None = None,
        sub_agents: dict[str, SubAgentBase] | None = None,
        bus: EventBus | None = None,
        memory_model: ChatModel | None = None,
        approvals: ApprovalBroker | None = None,
    ) -> None:
        """Everything not given is built from ``settings``.

        ``memory_model`` does the background preference and memory extraction. By default that
        is the agent's own model when the agent built it from settings; a model passed in (a
        ``ScriptedModel`` in tests, say) is never called behind the caller's back.
        """
        self.settings = settings or Settings.load()
        if self.settings.database.url and importlib.util.find_spec("psycopg") is None:
            raise ValueError("SABER_DATABASE_URL needs the PostgreSQL driver: pip install 'saber[postgres]'")
        self.settings.home.mkdir(parents=True, exist_ok=True)
        self._owns_model = model is None
        self.model = model or model_from_settings(self.settings)
        registry = ToolRegistry(builtin_tools(self.settings) if builtin else ())
        system = system_tools(self.settings) if builtin else None
        for t in system.tools if system is not None else ():
            registry.register(t)
        self.system_notes: list[str] = system.notes if system is not None else []
        """What of the system tools is off, and why (``saber config``, ``/api/status``)."""
        self.approvals = approvals or ApprovalBroker.from_settings(self.settings)
        """Questions steps ask a person before they run; ``approvals.decide`` answers one."""
        engine = knowledge or engine_from_settings(self.settings)
        for t in knowledge_tools(engine):
            registry.register(t)
        for t in tools:
            registry.register(t)
        for t in configured_tools(self.settings.tools.modules):  # every process: API nodes and workers
            registry.register(t)
        if memory_model is None and self._owns_model and not is_no_model(self.model):
            memory_model = self.model
        limits = limits_from_settings(self.settings)
        self._guarded = GuardedModel(TracedModel(self.model), limits)  # every call bounded; any failure a ModelError
        if memory_model is not None:
            memory_model = GuardedModel(memory_model, limits, purpose="extraction")
        self.services = Services(
            settings=self.settings,
            registry=registry,
            bus=bus or EventBus(),
            knowledge=engine,
            memory=memory or MemoryService.from_settings(self.settings, embedder=engine.embedder, model=memory_model),
            checkpoints=checkpoints or _checkpoint_store(self.settings),
            sub_agents=_DefaultSubAgents() if sub_agents is None else sub_agents,
            tool_index=ToolIndex(engine.embedder),
        )
        self._requests: dict[str, _Request] = {}
        self._queues: dict[str, asyncio.Queue[Event | None]] = {}
        """Event queues of requests made but not yet served (``_new_turn`` → ``_serve``)."""
        self._background: set[asyncio.Task[Any]] = set()
        self._minted: dict[str, None] = {}
        """Ids from ``new_task_id`` not yet used: new by construction, no checkpoint lookup needed."""
        self.mcp = MCPManager.from_settings(self.settings, registry)
        """The MCP servers of ``[[mcp.servers]]``; connected by ``start()`` or the first request."""

    async def start(self) -> list[dict[str, Any]]:
        """Connect the MCP servers (waiting at most ``mcp_startup_timeout``); returns their status."""
        return await self.mcp.start()

    async def __aenter__(self) -> Agent:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def registry(self) -> ToolRegistry:
        return self.services.registry

    @property
    def bus(self) -> EventBus:
        return self.services.bus

    # -- requests -------------------------------------------------------------------------------

    async def stream(
        self,
        query: str,
        *,
        user_id: str = "default",
        mode: Mode | None = None,
        selected_tools: Sequence[str] | None = None,
        use_rag: bool | None = None,
        task_id: str | None = None,
        history: Sequence[Message] | None = None,
    ) -> AsyncIterator[Event]:
        """Run one request, yielding its events; the last one is ``done``.

        ``history``: the conversation so far as the caller holds it (an OpenAI-style client sends
        it with every request); when given it replaces the user's stored history for this turn.

        Closing the stream early cancels the request: use ``contextlib.aclosing(agent.stream(...))``
        to have that happen when the loop is left (otherwise it happens when the generator is
        garbage-collected).
        """
        query = check_query(query, max_chars=self.settings.agent.max_query_chars)
        user_id = check_user_id(user_id)
        selected_tools = check_selected_tools(selected_tools)  # [] means no tool; only None means all
        if mode is not None and mode not in ("chat", "tool", "rag", "react"):
            raise ValueError(f"unknown mode {mode!r}: use chat, tool, rag or react")
        await self.mcp.start()
        tools = self.registry.filter(selected_tools) if selected_tools is not None else self.registry.snapshot()
        if use_rag is False:
            tools.pop("rag_search", None)
        minted = task_id in self._minted and self._minted.pop(task_id, None) is None
        if task_id is not None and not minted:
            await check_new_task_id(self.services.checkpoints, check_task_id(task_id), self._requests)
        options = RouteOptions(mode=mode, selected_tools=selected_tools, use_rag=use_rag)
        turn = self._new_turn(query, user_id, task_id or uuid.uuid4().hex, tools)
        turn.selected_tools = selected_tools
        given_history = list(history) if history is not None else None

        async def work() -> str:
            started = asyncio.get_running_loop().time()
            remember = await self._prepare(turn)
            if given_history is not None:
                turn.history = given_history
            if self.services.tool_index is not None:
                await self.services.tool_index.refresh(self.registry.snapshot(), turn.query, turn.tools,
                                                       above=self.settings.tools.select_above)
            await warm_offline(turn.query)  # CLDR's place names, loaded off the loop when needed
            decision = await self._route(turn, options)
            turn.route = decision
            await turn.emit(Route(mode=decision.mode, rule=decision.rule, tools=decision.tools,
                                  evidence=decision.evidence.to_dict() if decision.evidence else None))
            with approving_with(self.approvals.for_user(turn.user_id)):
                answer = await within_request(turn, lambda: self._dispatch(turn, decision),
                                              seconds=self.settings.agent.request_deadline, started=started)
            await self._finalize(turn, answer, remember)
            return answer

        async with contextlib.aclosing(self._serve(turn, work)) as events:
            async for event in events:
                yield event

    async def resume(self, task_id: str, *, user_id: str | None = None) -> AsyncIterator[Event]:
        """Continue a react task whose process died (or that was cancelled) from its checkpoint.

        Finished nodes keep their results and are not run again; the rest run, then the answer is
        written. With ``user_id``, only that user's own task can be resumed.
        """
        check_task_id(task_id)
        if user_id is not None:
            check_user_id(user_id)
        await self.mcp.start()
        saved = await resumable_task(self.services.checkpoints, task_id, user_id=user_id, running=self._requests)
        meta = saved.meta
        known = self.registry.snapshot()
        tools = {name: known[name] for name in meta.get("tools", known) if name in known}
        turn = self._new_turn(str(meta["query"]), str(meta["user_id"]), task_id, tools)

        async def work() -> str:
            if self.services.memory is not None:  # the plan is already made: only the answer's context is needed
                turn.preferences = await self.services.memory.preferences(turn.user_id)
            turn.route = RouteDecision(mode="react", rule=f"resume:checkpoint({saved.status})", tools=list(tools))
            await turn.emit(Route(mode="react", rule=turn.route.rule, tools=turn.route.tools))
            from saber.agent.modes.react import resume_react

            with approving_with(self.approvals.for_user(turn.user_id)):
                answer = await within_request(turn, lambda: resume_react(turn), seconds=self.settings.agent.request_deadline)
            await self._finalize(turn, answer, remember=None)
            return answer

        async with contextlib.aclosing(self._serve(turn, work)) as events:
            async for event in events:
                yield event

    async def tasks(self, *, user_id: str | None = None, unfinished: bool = True) -> list[dict[str, Any]]:
        """Checkpointed react tasks (id, status, user, query), oldest first; unfinished ones by default."""
        return await list_tasks(self.services.checkpoints, user_id=user_id, unfinished=unfinished)

    async def ask(
        self,
        query: str,
        *,
        user_id: str = "default",
        mode: Mode | None = None,
        selected_tools: Sequence[str] | None = None,
        use_rag: bool | None = None,
        task_id: str | None = None,
        history: Sequence[Message] | None = None,
    ) -> Answer:
        """Run a request to the end and return its answer with all events (the parameters are
        ``stream``'s)."""
        events = [e async for e in self.stream(query, user_id=user_id, mode=mode, selected_tools=selected_tools,
                                               use_rag=use_rag, task_id=task_id, history=history)]
        done = events[-1]
        assert isinstance(done, Done)
        return Answer(answer=done.answer, mode=done.mode, task_id=done.task_id, usage=done.usage, model=done.model,
                      interrupted=done.interrupted, events=events)

    def new_task_id(self) -> str:
        """A task id for ``stream`` that is new by construction: a random UUID, so ``stream`` skips
        the checkpoint lookup it makes for an id a caller chose (a store read per request, which
        under load queued behind other requests' store calls before the first event)."""
        task_id = uuid.uuid4().hex
        self._minted[task_id] = None
        while len(self._minted) > MINTED_KEPT:  # ids minted for requests that never started
            del self._minted[next(iter(self._minted))]
        return task_id

    def cancel(self, task_id: str, *, user_id: str | None = None) -> bool:
        """Cancel a running request. With ``user_id``, only that user's own request is cancelled."""
        request = self._requests.get(task_id)
        if request is None or (user_id is not None and request.user_id != user_id):
            return False
        request.task.cancel()
        return True

    def running(self, user_id: str | None = None) -> list[str]:
        return [tid for tid, r in self._requests.items() if user_id is None or r.user_id == user_id]

    async def drain(self, grace: float | None = None) -> None:
        """Wait for the background work started so far (memory extraction, bus subscribers); what
        is still running after ``grace`` seconds is cancelled."""
        try:
            async with asyncio.timeout(grace):
                while self._background:
                    await asyncio.gather(*list(self._background), return_exceptions=True)
                await self.bus.drain()
        except TimeoutError:
            for task in list(self._background):
                task.cancel()
            await asyncio.gather(*list(self._background), return_exceptions=True)
            log.warning("background work still running after %s s was cancelled", grace)

    async def aclose(self, *, grace: float | None = 30.0) -> None:
        """Wait for background work (cancelling what outlives ``grace`` seconds), then close the stores."""
        await self.drain(grace)
        await self.mcp.aclose()
        if self.services.memory is not None:
            await asyncio.to_thread(self.services.memory.close)  # closing the pool's connections
        if self.services.checkpoints is not None:
            await self.services.checkpoints.close()
        await asyncio.to_thread(self.approvals.close)  # disposing its pool blocks
        if self.services.knowledge is not None:
            await asyncio.to_thread(self.services.knowledge.close)
        close_model = getattr(self.model, "aclose", None)
        if self._owns_model and close_model is not None:
            await close_model()

    # -- one request ----------------------------------------------------------------------------

    def _new_turn(self, query: str, user_id: str, task_id: str, tools: dict[str, Tool]) -> Turn:
        if task_id in self._requests:
            raise ValueError(f"task {task_id} is already running")
        queue: asyncio.Queue[Event | None] = asyncio.Queue()

        async def emit(event: Event) -> None:
            if isinstance(event, Token):
                turn.streamed.append(event.content)
            await queue.put(event)

        turn = Turn(task_id=task_id, user_id=user_id, query=query, lang=language_of(query), emit=emit, model=self._guarded,
                    tools=tools, services=self.services)
        self._queues[task_id] = queue
        return turn

    async def _serve(self, turn: Turn, work: Callable[[], Awaitable[str]]) -> AsyncGenerator[Event, None]:
        """Run ``work`` as this request's task and yield its events until ``done``."""
        queue = self._queues.pop(turn.task_id)
        task = asyncio.create_task(self._run(turn, work, queue), name=f"saber-request-{turn.task_id}")
        self._requests[turn.task_id] = _Request(user_id=turn.user_id, task=task)
        try:
            while (event := await queue.get()) is not None:
                yield event
        finally:
            if not task.done():
                task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            self._requests.pop(turn.task_id, None)

    async def _run(self, turn: Turn, work: Callable[[], Awaitable[str]], queue: asyncio.Queue[Event | None]) -> None:
        answer, interrupted = "", False
        try:
            await turn.emit(Start(task_id=turn.task_id, query=turn.query, user_id=turn.user_id))
            with knowledge_scope(turn.user_id, isolated=self.settings.has_api_keys):
                answer = limit_answer(await work(), self.settings.agent.max_answer_chars)
        except asyncio.CancelledError:
            interrupted = True
            answer = "".join(turn.streamed)
            for task in turn.background:
                task.cancel()
        except Exception as exc:
            log.exception("request %s failed", turn.task_id)
            await turn.emit(Error(message=f"{type(exc).__name__}: {exc}", where="agent"))
            answer = ("请求失败：" if turn.lang == "zh" else "The request failed: ") + str(exc)
        mode = turn.route.mode if turn.route else "chat"
        await queue.put(Done(answer=answer, mode=mode, task_id=turn.task_id, usage=turn.usage_report(),
                             model=self.model.name if turn.answered_by_model else None, interrupted=interrupted,
                             answer_template=turn.answered_by_template))
        await queue.put(None)
        query, answer = await redacted(turn.query), await redacted(answer)  # published: never a raw secret
        self.bus.publish("agent.chat", {  # after done: a slow subscriber never delays the answer
            "task_id": turn.task_id, "user_id": turn.user_id, "query": query, "answer": answer,
            "mode": mode, "usage": turn.usage_report(), "interrupted": interrupted,
        })

    async def _prepare(self, turn: Turn) -> ModelExtraction | None:
        """History, preferences and memories for this turn. Returns None when the turn may not be
        remembered, else the model extraction it is worth (``memory.extraction``: no call when
        the turn states nothing about the user)."""
        memory = self.services.memory
        if memory is None:
            return None
        rejection = await checked_memory_text(turn.query)
        extraction = await off_loop_if_long(turn.query, functools.partial(
            memory.plan_extraction, turn.user_id, turn.query, rememberable=rejection is None))
        begun = await memory.begin_turn(turn.user_id, turn.query, stored_query=await redacted(turn.query))
        turn.history, turn.preferences = begun.history, begun.preferences
        for result in begun.results:
            await turn.emit(result.to_event())
        if extraction.preferences and not extraction.memories:  # with both, one call at the end does both
            self._background_task(self._learn_preferences(turn.user_id, extraction.text), turn)
        if begun.recall_error is not None:  # the turn goes on without memories, and says why
            await turn.emit(Error(message=f"memories not recalled: {begun.recall_error}", where="memory"))
        turn.memories = [m.text for m in begun.recalled]
        for m in begun.recalled:
            await turn.emit(Memory(action="recalled", content=m.text))
        if rejection is not None:
            await turn.emit(Memory(action="rejected", content="", reason=f"not remembered: {rejection.reason}"))
            return None
        return extraction

    async def _route(self, turn: Turn, options: RouteOptions) -> RouteDecision:
        loaded = await self.services.knowledge_loaded()
        evidence = await self._knowledge_evidence(turn, options) if loaded else None
        index = self.services.tool_index
        rules = functools.partial(route, turn.query, tools=list(turn.tools), knowledge_loaded=loaded, options=options,
                                  evidence=evidence, matcher=index.best_match if index is not None else None)
        decision = await off_loop_if_long(turn.query, rules)  # rule scans of a long query run in a thread
        if decision.mode != "tool":
            return decision
        for name in decision.tools:
            chosen = await choose_tool_call(turn, name)
            if chosen is not None:
                turn.tool_node, turn.tool_node_by_model = chosen
                return RouteDecision(mode="tool", rule=decision.rule, tools=[name], needs=decision.needs)
        if decision.tools == ["get_weather"] and not turn.has_model:  # no place named, none preferred: ask which
            return RouteDecision(mode="tool", rule=f"{decision.rule}(no city: ask)", tools=decision.tools,
                                 needs=decision.needs)
        fallback: Mode = "react" if decision.needs else "chat"
        turn.uncalled_tools = list(decision.tools)
        why = f"no arguments for {', '.join(decision.tools)}" if decision.tools else "no tool matches the query"
        return RouteDecision(mode=fallback, rule=f"{decision.rule}→{fallback}({why})", tools=list(turn.tools),
                             needs=decision.needs)

    async def _knowledge_evidence(self, turn: Turn, options: RouteOptions) -> KnowledgeEvidence | None:
        """How relevant the knowledge base is to the query (off the loop: it embeds), when routing needs it."""
        engine = self.services.knowledge
        if engine is None or not needs_knowledge_evidence(turn.query, options):
            return None
        from saber.agent.relevance import settings_gate  # numpy and the embedder: only with documents loaded

        gate = settings_gate(engine, self.settings)
        try:
            return await asyncio.to_thread(gate.evidence, turn.query)
        except EmbeddingError as exc:  # routed by keywords alone
            await turn.emit(Error(message=f"knowledge base relevance not measured: {exc}", where="router"))
            return None

    async def _dispatch(self, turn: Turn, decision: RouteDecision) -> str:
        if decision.mode == "tool" and turn.tool_node is not None:
            return await run_tool(turn, turn.tool_node)
        if decision.mode == "tool":
            return await ask_for_arguments(turn, decision.tools)
        if decision.mode == "rag":  # each mode is imported when first used: a time query never loads the planner
            from saber.agent.modes.rag import run_rag

            return await run_rag(turn)
        if decision.mode == "react":
            from saber.agent.modes.react import run_react

            return await run_react(turn)
        from saber.agent.modes.chat import run_chat

        return await run_chat(turn)

    async def _finalize(self, turn: Turn, answer: str, remember: ModelExtraction | None) -> None:
        memory = self.services.memory
        if memory is not None:
            await memory.append_history(turn.user_id, "assistant", await redacted(answer))
            if remember is not None:
                self._background_task(self._remember(turn.user_id, turn.query, answer, remember))

    # -- background work ------------------------------------------------------------------------

    def _background_task(self, work: Coroutine[Any, Any, None], turn: Turn | None = None) -> None:
        """Start ``work`` without waiting for it; with ``turn``, cancelling that request cancels it too."""
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        if turn is not None:
            turn.background.append(task)

    async def _learn_preferences(self, user_id: str, text: str) -> None:
        memory = self.services.memory
        if memory is None:
            return
        with _logged("preference extraction"):
            _, results = await memory.learn_preferences(user_id, text)
            for r in results:
                self.bus.publish("agent.memory", {"user_id": user_id, **r.to_event().data})

    async def _remember(self, user_id: str, query: str, answer: str, extraction: ModelExtraction) -> None:
        memory = self.services.memory
        if memory is None:
            return
        with _logged("memory extraction"):
            results = await memory.remember_turn(user_id, query, answer, use_model=extraction.memories,
                                                 model_text=extraction.text if extraction.batched else None,
                                                 with_preferences=extraction.preferences)
            for r in results:
                self.bus.publish("agent.memory", {"user_id": user_id, **r.to_event().data})


class _DefaultSubAgents(Mapping[str, SubAgentSpec]):
    """The built-in sub-agents, imported when a plan first needs them: they bring the graph
    runtime, the knowledge base and json-repair, which a query answered by one tool never uses."""

    @functools.cached_property
    def _agents(self) -> dict[str, SubAgentBase]:
        from saber.agent.subagents import default_sub_agents

        return default_sub_agents()

    def __getitem__(self, name: str) -> SubAgentSpec:
        return self._agents[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._agents)

    def __len__(self) -> int:
        return len(self._agents)


@contextlib.contextmanager
def _logged(what: str) -> Iterator[None]:
    """Background work logs its failure and never raises into the event loop."""
    try:
        yield
    except Exception:
        log.exception("%s failed", what)


def _checkpoint_store(settings: Settings) -> CheckpointStore:
    if settings.database.url:
        from saber.graph.checkpoint.postgres import PostgresCheckpointStore  # the postgres extra

        return PostgresCheckpointStore(settings.database.url, lease_seconds=settings.graph.checkpoint_lease,
                                       pool_size=settings.database.pool_size)
    return SQLiteCheckpointStore(settings.sqlite_path, lease_seconds=settings.graph.checkpoint_lease,
                                 pool_size=settings.database.pool_size)
