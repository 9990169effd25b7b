"""Streamed planning in react mode: the graph runs while the planner is still writing it.

The planner's tokens go through ``IncrementalPlanParser``; each node it yields is handed to the
running ``GraphRuntime`` (``open_feed``/``add_nodes``), which starts it as soon as its
dependencies have finished. When the stream ends the whole output is parsed as today; what the
final plan changes or drops is reconciled with what already ran (``GraphRuntime.reconcile``).
If the stream breaks or the final plan is unusable, the rule plan supplies what has not run;
nodes already handed over keep running, and finished ones keep their results and checkpoints.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from saber.agent.context import Turn
from saber.agent.plan_report import TRUNCATED_META, all_refused, plan_event, plan_report, stop_reason
from saber.events import Error, Plan
from saber.graph.node import Node
from saber.graph.result import RunResult
from saber.graph.runtime import GraphRuntime
from saber.llm.base import ChatModel, ModelError
from saber.llm.guarded import GuardedModel, as_model_error
from saber.llm.types import Message, StreamEnd, TextDelta
from saber.planner import ParsedPlan
from saber.planner.incremental import IncrementalPlanParser

_INLINE_CHARS = 16_384
"""A longer output is parsed in a thread, off the event loop (as ``make_plan`` does)."""


class _LazyRun:
    """The graph run, started when the first node arrives (a plan with no node runs no graph)."""

    def __init__(self, make: Callable[[], Awaitable[GraphRuntime]]) -> None:
        self.make = make
        self.runtime: GraphRuntime | None = None
        self.task: asyncio.Task[RunResult] | None = None

    @classmethod
    def started(cls, runtime: GraphRuntime) -> _LazyRun:
        """A run of an existing runtime (a restored one), started now with its feed open."""

        async def made() -> GraphRuntime:
            return runtime

        run = cls(made)
        run.runtime = runtime
        runtime.open_feed()
        run.task = asyncio.create_task(runtime.run(), name="saber-streamed-graph")
        return run

    async def add_nodes(self, nodes: list[Node], *, even_none: bool = False) -> None:
        """Hand ``nodes`` to the graph, starting it on the first; ``even_none`` starts it with none."""
        if not nodes and not (even_none and self.runtime is None):
            return
        if self.runtime is None:
            self.runtime = await self.make()
            self.runtime.open_feed()
            self.task = asyncio.create_task(self.runtime.run(), name="saber-streamed-graph")
        self.runtime.add_nodes(nodes)

    def reconcile(self, changed: Mapping[str, Node], dropped: list[str]) -> None:
        if self.runtime is not None:
            self.runtime.reconcile(changed, dropped)

    async def finish(self) -> RunResult | None:
        if self.runtime is None or self.task is None:
            return None
        self.runtime.close_feed()
        return await self.task

    async def abandon(self) -> None:
        if self.runtime is not None and self.task is not None:
            self.runtime.cancel()
            await asyncio.gather(self.task, return_exceptions=True)


async def run_streamed_plan(turn: Turn, messages: list[Message], make_runtime: Callable[[], Awaitable[GraphRuntime]],
                            rules: Callable[[list[str]], ParsedPlan],
                            run_empty: Callable[[], bool] = lambda: False) -> tuple[ParsedPlan, str, RunResult | None]:
    """Stream the plan into a runtime made by ``make_runtime`` (empty; made when the first node
    arrives) and run it; return the final plan, where it came from ("model" or "rules") and the
    run (None when no node ever ran). ``rules(warnings)`` builds the rule plan; ``run_empty()``
    says whether a plan left with no node still runs (its replanner may add what it lost)."""
    run = _LazyRun(make_runtime)
    try:
        plan, source = await _stream_into(turn, messages, run, rules, run_empty)
        if run.runtime is None and run_empty():
            await run.add_nodes([], even_none=True)
        await turn.emit(plan_event(plan, source, turn.plan_report, turn.prompt_tools))
        if turn.plan_report.truncated and run.runtime is not None:  # saved with the whole plan, at close_feed
            run.runtime.meta[TRUNCATED_META] = turn.plan_report.meta
        return plan, source, await run.finish()
    except BaseException:  # cancelled, or a bug: no graph left running behind the turn
        await run.abandon()
        raise


async def complete_interrupted_plan(turn: Turn, runtime: GraphRuntime, plan: ParsedPlan,
                                    source: str) -> RunResult:
    """Resume a task whose process stopped while the planner was still streaming its plan: the
    checkpoint holds only the nodes written until then. Run those (finished ones keep their
    results) with the nodes of ``plan`` (planned again) that do not repeat one of them."""
    kept = list(runtime.graph)
    run = _LazyRun.started(runtime)
    try:
        merged = await _fallback(run, kept, plan)
        note = (f"the plan was still being written when the task stopped: planned again; {len(kept)} step(s) "
                f"kept, {len(merged.nodes) - len(kept)} added")
        await turn.emit(Plan(format=merged.format, nodes=[n.to_dict() for n in merged.nodes],
                             warnings=[*merged.warnings, note], source=source, tools=turn.prompt_tools))
        result = await run.finish()
    except BaseException:
        await run.abandon()
        raise
    assert result is not None
    return result


def _planner_model(model: ChatModel) -> ChatModel:
    """A stream is an answer by default: the planner's stream gets the planner's limits."""
    return model.for_purpose("planner") if isinstance(model, GuardedModel) else model


async def _stream_into(turn: Turn, messages: list[Message], runtime: _LazyRun,
                       rules: Callable[[list[str]], ParsedPlan], replans: Callable[[], bool]) -> tuple[ParsedPlan, str]:
    settings = turn.services.settings
    parser = IncrementalPlanParser(turn.tools, agents=turn.services.agent_descriptions(),
                                   max_nodes=settings.planner.max_nodes)
    broken: ModelError | None = None
    stopped: str | None = None
    try:
        async for chunk in _planner_model(turn.model).stream(messages, temperature=0):
            if isinstance(chunk, TextDelta) and chunk.content:
                await runtime.add_nodes(parser.feed(chunk.content))
            elif isinstance(chunk, StreamEnd):
                turn.add_usage(chunk.usage)
                stopped = stop_reason(chunk.cut, chunk.finish_reason)
    except Exception as exc:  # a model not wrapped in GuardedModel can raise anything
        broken = exc if isinstance(exc, ModelError) else as_model_error(turn.model.name, exc)
    handed = list(parser.yielded.values())
    finish = functools.partial(parser.finish, broken=broken is not None)
    final = await asyncio.to_thread(finish) if len(parser.text) > _INLINE_CHARS else finish()
    if broken is not None:
        turn.plan_report = dataclasses.replace(  # the rules supply the rest: no replan is asked for it
            plan_report(final.plan, stopped=f"the planner stream broke: {broken}", lost=len(final.late)), stopped=None)
        await turn.emit(Error(message=f"planner stream broke after {len(handed)} node(s): {broken}", where="planner"))
        return await _fallback(runtime, handed, rules([f"planner stream broke ({broken}); the rule planner "
                                                       "supplied what had not run"])), "rules"
    turn.plan_report = plan_report(final.plan, stopped=stopped)
    if final.plan is None:
        assert final.error is not None
        if handed:
            runtime.reconcile({}, final.dropped)
        refused = all_refused(final.error.warnings)
        if refused is not None:
            turn.plan_report = plan_report(refused, stopped=stopped)
            if replans():
                return refused, "model"
        why = f"planner output unusable ({final.error}); used the rule planner"
        return await _fallback(runtime, [], rules([*final.error.warnings, why])), "rules"
    if final.changed or final.dropped:
        runtime.reconcile(final.changed, final.dropped)
    await runtime.add_nodes(final.late)
    return final.plan, "model"


async def _fallback(runtime: _LazyRun, handed: list[Node], plan: ParsedPlan) -> ParsedPlan:
    """Add the rule plan's nodes that do not repeat one already handed over (same tool and
    arguments), under ids that do not clash; return the plan as it now stands."""
    same = {_key(n): n.id for n in handed}
    taken = {n.id for n in handed}
    rename: dict[str, str] = {}
    extra: list[Node] = []
    for node in plan.nodes:
        if _key(node) in same:
            rename[node.id] = same[_key(node)]
            continue
        new_id = node.id
        suffix = 1
        while new_id in taken:
            new_id, suffix = f"rule{suffix}_{node.id}", suffix + 1
        taken.add(new_id)
        rename[node.id] = new_id
        extra.append(node)
    added = [_renamed(n, rename) for n in extra]
    await runtime.add_nodes(added)
    return ParsedPlan(nodes=[*handed, *added], format=plan.format, shape=plan.shape, warnings=list(plan.warnings))


def _key(node: Node) -> str:
    return f"{node.target}\0{sorted(node.params.items())!r}"


def _renamed(node: Node, rename: Mapping[str, str]) -> Node:
    data = node.to_dict()
    data["id"] = rename[node.id]
    data["depends_on"] = [rename.get(d, d) for d in node.depends_on]
    data["params"] = _replace_refs(data.get("params") or {}, rename)
    return Node.from_dict(data)


def _replace_refs(value: Any, rename: Mapping[str, str]) -> Any:
    """``${old}`` / ``${old.path}`` placeholders pointed at the renamed ids."""
    if isinstance(value, str):
        return re.sub(r"\$\{([A-Za-z0-9_\-]+)", lambda m: "${" + rename.get(m.group(1), m.group(1)), value)
    if isinstance(value, dict):
        return {k: _replace_refs(v, rename) for k, v in value.items()}
    if isinstance(value, Iterable) and not isinstance(value, bytes):
        return [_replace_refs(v, rename) for v in value]
    return value
