"""Running nodes: the workers, each node's attempts (retries, timeouts) and its tool or sub-agent call."""

from __future__ import annotations

import asyncio
import inspect
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from saber.config.graph import GraphConfig
from saber.events import Event, NodeStart, Step
from saber.graph.agents import SubAgent, SubAgentTask
from saber.graph.approval import current_gate, denial_message
from saber.graph.attempts import Attempt, ToolEvents
from saber.graph.idempotency import bind, node_key, unbind
from saber.graph.node import Node, NodeStatus
from saber.graph.outcome import NodeOutcome, RaceOutcome
from saber.graph.races import Race
from saber.graph.retry import Failure, backoff_seconds, classify, for_side_effects
from saber.graph.state import GraphState
from saber.graph.tool_output import is_small, safe_result
from saber.tools.base import Tool, call_in_thread
from saber.tools.errors import ToolError, UnknownToolError

log = logging.getLogger(__name__)

OWN_TIMEOUT_GRACE = 5.0
"""Seconds past a tool's own time limit (``Tool.timeout``) before the step timeout fires: time for
the tool to stop its work and report its own timeout."""

Substitute = Callable[[Mapping[str, Any], Mapping[str, Any]], Any]
"""``(params, results by dependency id) -> params with placeholders replaced``; the default is
``saber.graph.placeholders.substitute_placeholders`` (``${n1}``, ``${n1.city}``, and ``$n1``/``{{n1}}`` for dependencies; a bare ``$1`` is never one)."""


class NodeExecutor:
    """Runs the nodes the scheduler loop launches and reports each outcome; never touches the graph."""

    def __init__(
        self, run: object, *, state: GraphState, tools: Mapping[str, Tool], agents: Mapping[str, SubAgent],
        config: GraphConfig, task_id: str, substitute: Substitute, rng: random.Random,
        emit: Callable[[Event], Awaitable[None]], report: Callable[[NodeOutcome | RaceOutcome], None],
    ) -> None:
        self.run = run
        """The runtime whose attempts these are (see ``Attempt.run``)."""
        self.state = state
        self.tools = tools
        self.agents = agents
        self.config = config
        self.task_id = task_id
        self.substitute = substitute
        self.rng = rng
        self.emit = emit
        self.report = report
        self.sem = asyncio.Semaphore(config.max_parallel)
        self.tool_events: ToolEvents | None = None
        """What tools emit through (None without on_event); tracks the attempts under way."""

    async def node_worker(self, node: Node) -> None:
        try:
            outcome = await self.run_node(node)
        except Exception as exc:  # a bug in the runtime itself: fail the node, keep the run alive
            log.exception("node %s crashed the runtime worker", node.id)
            outcome = NodeOutcome(node_id=node.id, status=NodeStatus.FAILED, error=f"internal error: {exc!r}")
        self.report(outcome)

    def race(self, group: str, members: list[Node]) -> Race:
        return Race(group, members, self.run_node, self.config, self.report)

    async def race_worker(self, race: Race) -> None:
        try:
            await race.run()
        except Exception as exc:
            log.exception("race group %s crashed the runtime worker", race.group)
            race.decided = True
            self.report(RaceOutcome(group=race.group, winner=None, outcomes=[
                NodeOutcome(node_id=m.id, status=NodeStatus.FAILED, error=f"internal error: {exc!r}")
                for m in race.members
            ]))

    async def run_node(self, node: Node) -> NodeOutcome:
        """All attempts of one node: retryable failures are retried with backoff and jitter."""
        started = time.perf_counter()
        refused = await self._approval(node)
        if refused is not None:
            return NodeOutcome(node_id=node.id, status=NodeStatus.FAILED, error=refused,
                               duration_ms=(time.perf_counter() - started) * 1000.0)
        attempts = self.config.attempts
        tool = self.tools.get(node.tool or "") if node.type == "tool" else None
        timeout = self.config.timeout_for(node.type)
        if timeout and tool is not None and tool.timeout is not None:
            timeout = max(timeout, tool.timeout + OWN_TIMEOUT_GRACE)
        for attempt in range(1, attempts + 1):
            node.attempts = attempt
            async with self.sem:
                await self.emit(NodeStart(id=node.id, tool=node.target, attempt=attempt))
                current = Attempt(run=self.run, node_id=node.id, number=attempt)
                try:
                    async with asyncio.timeout(timeout or None):
                        result = await self._attempt(node, current)
                except Exception as exc:
                    failure = for_side_effects(classify(exc, timeout=timeout), exc, tool)
                    if failure.retryable and attempt < attempts and current.abandoned_thread():
                        failure = Failure(retryable=False, message=f"{failure.message}; the tool is still running "
                                          "in its thread, so it is not retried (a retry would run it twice at once)")
                else:
                    return NodeOutcome(node_id=node.id, status=NodeStatus.DONE, result=result,
                                       duration_ms=(time.perf_counter() - started) * 1000.0)
            if not failure.retryable or attempt == attempts:
                return NodeOutcome(node_id=node.id, status=NodeStatus.FAILED, error=failure.message,
                                   duration_ms=(time.perf_counter() - started) * 1000.0)
            delay = backoff_seconds(attempt, self.config, self.rng)
            await self.emit(Step(kind="thought", node_id=node.id, tool=node.target,
                                 content=f"{node.id} attempt {attempt} failed: {failure.message}; "
                                         f"retrying in {delay * 1000:.0f} ms"))
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _approval(self, node: Node) -> str | None:
        """None when the node may run; else why not (denied, or no answer in time). Calls whose
        arguments do not validate are left to fail in their attempt, with the usual message."""
        gate = current_gate()
        tool = self.tools.get(node.tool or "") if node.type == "tool" else None
        if gate is None or tool is None:
            return None
        inputs = self.state.inputs(node) if node.depends_on else {}
        params = self.substitute(node.params, {dep: value for (dep, _), value in inputs.items()}) if inputs else node.params
        try:
            args = tool.validate(params)
        except ToolError:
            return None
        reason = gate.reason_for(tool, args)
        if reason is None:
            return None
        decision = await gate.request(task_id=self.task_id, node_id=node.id, tool=tool.name, params=args, reason=reason,
                                      emit=self.emit)
        return None if decision.approved else denial_message(decision)

    async def _attempt(self, node: Node, current: Attempt) -> Any:
        key = bind(node_key(self.task_id, node.id))  # the same for every attempt and across resumes
        try:
            events = self.tool_events
            if events is None:
                return await self._call(node, current)
            token = events.enter(current)
            try:
                return await self._call(node, current)
            finally:
                events.leave(current, token)
        finally:
            unbind(key)

    async def _bounded(self, value: Any) -> Any:
        """``value`` JSON-safe and within ``max_result_chars`` (see ``tool_output``); a big one is
        made so in a thread, off the event loop."""
        limit = self.config.max_result_chars
        if is_small(value):
            return safe_result(value, limit)
        return await asyncio.to_thread(safe_result, value, limit)

    async def _call(self, node: Node, current: Attempt) -> Any:
        inputs = self.state.inputs(node) if node.depends_on else {}
        # placeholders can only name dependencies: without any, there is nothing to substitute
        params = self.substitute(node.params, {dep: value for (dep, _), value in inputs.items()}) if inputs else node.params
        if node.type == "sub_agent":
            agent = self.agents.get(node.agent or "")
            if agent is None:
                known = ", ".join(sorted(self.agents)) or "none"
                raise ToolError(f"unknown agent: {node.agent} (known: {known})", retryable=False)
            await self.emit(Step(kind="action", content=node.goal or f"{node.agent}", tool=node.agent,
                                 params=params, node_id=node.id))
            task = SubAgentTask(goal=node.goal, params=params, node_id=node.id, agent=node.agent or "",
                                task_id=self.task_id, attempt=current.number,
                                upstream={f"{dep}:{target}": value for (dep, target), value in inputs.items()})
            return await self._bounded(await agent.run(task))
        tool = self.tools.get(node.tool or "")
        if tool is None:
            raise UnknownToolError(node.tool or "", known=list(self.tools))
        args = tool.validate(params)
        await self.emit(Step(kind="action", content=f"{tool.name}", tool=tool.name, params=args, node_id=node.id))
        if not tool.is_sync:
            return await self._bounded(await tool.run(args, validate=False))
        # A thread of its own (not the loop's shared executor): one stuck past its timeout keeps
        # only that thread, and the attempt can tell it is still running (see run_node). The
        # result is made safe in that thread too.
        current.call = call_in_thread(_bounded_call, tool.execute, args, self.config.max_result_chars)
        result = await current.call.future
        return await self._bounded(await result) if inspect.isawaitable(result) else result


def _bounded_call(execute: Callable[[dict[str, Any]], Any], args: dict[str, Any], limit: int) -> Any:
    """A sync tool's call and, in the same worker thread, its result made safe (``tool_output``)."""
    result = execute(args)
    return result if inspect.isawaitable(result) else safe_result(result, limit)
