"""react: the planner writes a task graph, the runtime runs it, the generator writes the answer."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from saber.agent.context import Turn
from saber.agent.generate import stream_answer, with_failed_steps
from saber.agent.modes.chat import run_chat
from saber.agent.modes.react_stream import complete_interrupted_plan, run_streamed_plan
from saber.agent.modes.replan import model_replanner
from saber.agent.observations import observations
from saber.agent.plan_answer import template_answer
from saber.agent.plan_report import (
    TRUNCATED_META,
    PlanReport,
    all_refused,
    plan_event,
    plan_report,
    stop_reason,
)
from saber.agent.prompts import GENERATE
from saber.agent.render import rule_answer
from saber.agent.tasks import TASK_KIND
from saber.events import Error, Plan, Token
from saber.graph.persist import answered
from saber.graph.result import RunResult
from saber.graph.runtime import GraphRuntime
from saber.graph.taskgraph import GraphError
from saber.llm.base import ModelError
from saber.llm.types import Message
from saber.planner import (
    ParsedPlan,
    PlanParseError,
    build_planner_prompt,
    parse_plan,
    plan_response_format,
    rule_plan,
)
from saber.planner.preselect import preselect_agents, preselect_tools
from saber.redact import redacted
from saber.tools.index import select_prompt_tools


async def make_plan(turn: Turn) -> tuple[ParsedPlan, str]:
    """The model's plan, or the rule plan when there is no model or its output is unusable.

    Returns the plan and where it came from ("model" or "rules"); ``turn.plan_report`` says what
    the plan left out.
    """
    agents = turn.services.agent_descriptions()
    turn.plan_report = PlanReport()
    if not turn.has_model:
        return _rules(turn, agents, []), "rules"
    messages = _planner_messages(turn, agents)
    fmt = plan_response_format(turn.tools, agents) if turn.services.settings.llm.structured_output else None
    try:
        completion = await turn.model.complete(messages, response_format=fmt, temperature=0)
    except ModelError as exc:
        await turn.emit(Error(message=f"planner model failed: {exc}", where="planner"))
        return _rules(turn, agents, [f"planner model failed ({exc}); used the rule planner"]), "rules"
    turn.add_usage(completion.usage)
    stopped = stop_reason(None, completion.finish_reason)
    try:
        plan = await _parse_off_loop(completion.text, turn, agents)
    except PlanParseError as exc:
        refused = all_refused(exc.warnings)
        turn.plan_report = plan_report(refused, stopped=stopped)
        if refused is not None and _replans_gaps(turn):
            return refused, "model"
        return _rules(turn, agents, [*exc.warnings, f"planner output unusable ({exc}); used the rule planner"]), "rules"
    turn.plan_report = plan_report(plan, stopped=stopped)
    return plan, "model"


def _planner_messages(turn: Turn, agents: Mapping[str, str]) -> list[Message]:
    """Cards only for the tools the query may need (``planner.preselect``, then the tool index
    among many); ``turn.prompt_tools`` names them when some were left out."""
    keep = turn.selected_tools or ()
    candidates = preselect_tools(turn.query, turn.tools, keep=keep)
    shown, selected = select_prompt_tools(
        turn.query, candidates, turn.services.tool_index, above=turn.services.settings.tools.select_above,
        k=turn.services.settings.tools.select_k, keep=keep)
    turn.prompt_tools = selected if selected is not None or len(shown) == len(turn.tools) else list(shown)
    return build_planner_prompt(turn.query, shown, agents=preselect_agents(turn.query, agents),
                                preferences=turn.preferences, history=turn.history, language=turn.lang)


_INLINE_PLAN_CHARS = 16_384


async def _parse_off_loop(text: str, turn: Turn, agents: Mapping[str, str]) -> ParsedPlan:
    """``parse_plan`` capped at ``planner_max_nodes``; a long output is parsed in a thread, off the loop."""
    cap = turn.services.settings.planner.max_nodes
    if len(text) <= _INLINE_PLAN_CHARS:
        return parse_plan(text, turn.tools, agents=agents, max_nodes=cap)
    return await asyncio.to_thread(parse_plan, text, turn.tools, agents=agents, max_nodes=cap)


def _rules(turn: Turn, agents: Mapping[str, str], warnings: list[str]) -> ParsedPlan:
    plan = rule_plan(turn.query, turn.tools, agents=agents, preferences=turn.preferences)
    return ParsedPlan(nodes=plan.nodes, format=plan.format, shape=plan.shape, warnings=[*warnings, *plan.warnings])


async def run_react(turn: Turn) -> str:
    settings = turn.services.settings
    if settings.planner.stream and turn.has_model and not settings.llm.structured_output:
        return await _run_react_streamed(turn)
    plan, source = await make_plan(turn)
    turn.plan_answer = plan.answer if source == "model" else None
    await turn.emit(plan_event(plan, source, turn.plan_report, turn.prompt_tools))
    if not plan.nodes and not _replans_gaps(turn):
        return await run_chat(turn)
    runtime = await _runtime_for(turn, plan, source)
    if runtime is None:
        return await run_chat(turn)
    if turn.plan_report.truncated:
        runtime.meta[TRUNCATED_META] = turn.plan_report.meta
    return await _answer_and_record(turn, await runtime.run())


async def _run_react_streamed(turn: Turn) -> str:
    """Plan and run at once (``react_stream.py``); a plan with no node is answered as chat."""
    agents = turn.services.agent_descriptions()

    async def make_runtime() -> GraphRuntime:
        return GraphRuntime([], turn.tools, turn.services.graph_config(), turn.emit, task_id=turn.task_id,
                            meta=await task_meta(turn), answer_follows=True, **_runtime_parts(turn))

    plan, source, run = await run_streamed_plan(turn, _planner_messages(turn, agents), make_runtime,
                                                lambda warnings: _rules(turn, agents, warnings),
                                                run_empty=lambda: _replans_gaps(turn))
    turn.plan_answer = plan.answer if source == "model" else None
    if run is None:
        return await run_chat(turn)
    return await _answer_and_record(turn, run)


async def _runtime_for(turn: Turn, plan: ParsedPlan, source: str) -> GraphRuntime | None:
    """A runtime for the plan; if the graph cannot run (a malformed race group...), the rule plan's."""
    try:
        return GraphRuntime(list(plan.nodes), turn.tools, turn.services.graph_config(), turn.emit,
                            task_id=turn.task_id, meta=await task_meta(turn), answer_follows=True, **_runtime_parts(turn))
    except GraphError as exc:
        await turn.emit(Error(message=f"the plan cannot run ({exc}); using the rule planner", where="graph"))
    if source == "rules":
        return None
    fallback = _rules(turn, turn.services.agent_descriptions(), ["model plan rejected by the runtime"])
    await turn.emit(Plan(format=fallback.format, nodes=[n.to_dict() for n in fallback.nodes],
                         warnings=list(fallback.warnings), source="rules"))
    if not fallback.nodes:
        return None
    try:
        return GraphRuntime(list(fallback.nodes), turn.tools, turn.services.graph_config(), turn.emit,
                            task_id=turn.task_id, meta=await task_meta(turn), answer_follows=True, **_runtime_parts(turn))
    except GraphError as exc:
        await turn.emit(Error(message=f"the rule plan cannot run either ({exc})", where="graph"))
        return None


async def resume_react(turn: Turn) -> str:
    """Continue this turn's checkpointed graph (nodes that finished keep their results), then answer."""
    parts = _runtime_parts(turn)
    store = parts.pop("checkpoint")
    assert store is not None
    runtime = await GraphRuntime.restore(turn.task_id, store, turn.tools, on_event=turn.emit, answer_follows=True,
                                         **parts)
    if not runtime.plan_incomplete:
        return await _answer_and_record(turn, await runtime.run())
    plan, source = await make_plan(turn)
    return await _answer_and_record(turn, await complete_interrupted_plan(turn, runtime, plan, source))


async def _answer_and_record(turn: Turn, run: RunResult) -> str:
    """Write the answer, then mark the checkpointed task finished: until then it stays
    "answering", so a kill or cancel during the answer leaves it listed and resumable."""
    answer = await answer_from_run(turn, run)
    store = turn.services.checkpoints
    if store is not None and run.status != "cancelled":
        await answered(store, turn.task_id, run.status)
    return answer


async def answer_from_run(turn: Turn, run: RunResult) -> str:
    """The plan's answer template filled in when it may be (``plan_answer``), else the generator's answer."""
    filled = await template_answer(turn, run)
    if filled is not None:
        return filled
    if turn.lang == "zh":
        prompt = f"用户的问题：{turn.query}\n\n执行的步骤与结果：\n{observations(run, turn.lang)}"
    else:
        prompt = f"The user's question: {turn.query}\n\nSteps run and their results:\n{observations(run, turn.lang)}"
    answer = await stream_answer(turn, turn.messages(GENERATE, prompt, with_history=False),
                                 fallback=rule_answer(run, turn.lang, query=turn.query, preferences=turn.preferences,
                                                      default_timezone=turn.services.settings.tools.default_timezone),
                                 where="generator")
    answer = await with_failed_steps(turn, answer, list(run.nodes.values()))
    note = turn.plan_report.note(turn.lang, replanned=turn.plan_replanned)
    if note:  # a cut or refused plan is said plainly, by a model's answer or the rules'
        await turn.emit(Token(content=note))
    return answer + note


async def task_meta(turn: Turn) -> dict[str, Any]:
    """What a checkpoint keeps about the request, so another process can resume it (the query
    with its secrets redacted: a checkpoint is stored and listed by ``saber tasks``)."""
    return {"kind": TASK_KIND, "query": await redacted(turn.query), "user_id": turn.user_id,
            "tools": sorted(turn.tools)}


def _replans_gaps(turn: Turn) -> bool:
    """Whether a plan with no step left is still run: it lost steps, and the replanner may ask for them."""
    return bool(turn.plan_report.gaps) and turn.services.graph_config().max_replan > 0 and turn.has_model


def _runtime_parts(turn: Turn) -> dict[str, Any]:
    """Sub-agents bound to this turn, the checkpoint store and, when enabled, the replanner."""
    services = turn.services
    config = services.graph_config()
    parts: dict[str, Any] = {
        "agents": {name: agent.bind(turn) for name, agent in services.sub_agents.items()},
        "checkpoint": services.checkpoints,
    }
    if config.max_replan > 0 and turn.has_model:
        parts["replanner"] = model_replanner(turn)
    return parts
