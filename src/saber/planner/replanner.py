"""Replanning: after a failure or a stage, the model may add a few nodes to the graph.

A ``ReplanBudget()`` allows none; the Agent's comes from ``graph.max_replan``. The caller — the graph runtime, between
nodes, never while it mutates the graph — passes the graph's state; the model sees what ran,
what it returned or why it failed, and answers with new nodes only. They are validated like a
plan (``parse_plan`` with ``existing`` and ``limit``): ids must not clash with existing ones, new
nodes may depend on existing nodes, at most ``max_new_nodes`` are kept.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from saber.graph.node import Node, NodeStatus
from saber.llm.base import ChatModel, ModelError
from saber.llm.types import Message, Usage
from saber.planner.parse import parse_plan
from saber.planner.prompt import Language, build_planner_prompt, detect_language
from saber.planner.result import PlanParseError
from saber.tools.base import Tool


@dataclass(kw_only=True)
class ReplanBudget:
    """How many replans one task may make, and how many nodes each may add."""

    max_replans: int = 0
    """0 turns replanning off (the default)."""
    max_new_nodes: int = 3
    used: int = 0

    @property
    def enabled(self) -> bool:
        return self.max_replans > 0

    @property
    def remaining(self) -> int:
        return max(0, self.max_replans - self.used)

    def spend(self) -> None:
        if self.remaining <= 0:
            raise RuntimeError(f"replan budget spent ({self.used}/{self.max_replans})")
        self.used += 1


@dataclass(frozen=True, kw_only=True)
class ReplanResult:
    """What one replan produced: the nodes to add, warnings, and why it was asked for."""

    nodes: list[Node] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    reason: str = ""
    attempted: bool = False
    """False when the budget did not allow a model call."""
    usage: Usage = field(default_factory=Usage)
    """Tokens the model call used."""


def describe_state(nodes: Sequence[Node], *, result_chars: int = 300) -> str:
    """One line per node: id, target, status, and its result or error (clipped)."""
    lines = []
    for n in nodes:
        outcome = n.error if n.status is NodeStatus.FAILED else n.result
        text = outcome if isinstance(outcome, str) else json.dumps(outcome, ensure_ascii=False, default=str)
        text = " ".join((text or "").split())
        if len(text) > result_chars:
            text = text[: result_chars - 1] + "…"
        deps = f" depends_on={n.depends_on}" if n.depends_on else ""
        lines.append(f"- {n.id} {n.type}:{n.target} params={json.dumps(n.params, ensure_ascii=False, default=str)}{deps}"
                     f" status={n.status.value}" + (f" → {text}" if text else ""))
    return "\n".join(lines)


_ASK = {
    "zh": ("当前任务图的执行情况：\n{state}\n\n原因：{reason}\n"
           "如需补救，只输出要新增的节点（JSON 数组，最多 {n} 个），id 不要与已有节点重复（从 {next} 开始），"
           "depends_on 可以引用已有节点；不需要新增就输出 []。"),
    "en": ("State of the task graph:\n{state}\n\nReason: {reason}\n"
           "If something should be added, output only the NEW nodes (a JSON array, at most {n}); ids must not "
           "repeat existing ones (start at {next}); depends_on may name existing nodes. Output [] if nothing is needed."),
}


def build_replan_prompt(
    query: str, nodes: Sequence[Node], tools: Mapping[str, Tool], *, reason: str, max_new_nodes: int,
    agents: Mapping[str, str] | None = None, language: Language | None = None,
) -> list[Message]:
    """The planner prompt for a replan: the query, the nodes so far with their outcomes, and why."""
    lang = language or detect_language(query)
    messages = build_planner_prompt(query, tools, agents=agents, language=lang)
    taken = {n.id for n in nodes}
    k = len(nodes) + 1
    while f"n{k}" in taken:
        k += 1
    ask = _ASK[lang].format(state=describe_state(nodes), reason=reason, n=max_new_nodes, next=f"n{k}")
    return [messages[0], Message.user(messages[1].content + "\n\n" + ask)]


async def replan(
    query: str,
    nodes: Sequence[Node],
    tools: Mapping[str, Tool],
    model: ChatModel,
    *,
    budget: ReplanBudget,
    reason: str,
    agents: Mapping[str, str] | None = None,
    language: Language | None = None,
) -> ReplanResult:
    """New nodes proposed by ``model`` for the graph in ``nodes``; spends one unit of ``budget``.

    Never raises for a bad answer: an unreadable reply, a model error or an exhausted budget
    gives no nodes and says why in ``warnings``.
    """
    if budget.remaining <= 0:
        why = "replanning is off" if not budget.enabled else f"replan budget spent ({budget.used}/{budget.max_replans})"
        return ReplanResult(warnings=[why], reason=reason)
    budget.spend()
    messages = build_replan_prompt(query, nodes, tools, reason=reason, max_new_nodes=budget.max_new_nodes,
                                   agents=agents, language=language)
    try:
        completion = await model.complete(messages, temperature=0)
    except ModelError as exc:
        return ReplanResult(warnings=[f"replan model call failed: {exc}"], reason=reason, attempted=True)
    existing: dict[str, Any] = {n.id: n for n in nodes}
    try:
        parsed = parse_plan(completion.text, tools, agents=agents, existing=existing, limit=budget.max_new_nodes)
    except PlanParseError as exc:
        return ReplanResult(warnings=[*exc.warnings, f"replan output unusable: {exc}"], reason=reason, attempted=True,
                            usage=completion.usage)
    fresh, repeats = _without_repeats(parsed.nodes, nodes)
    warnings = [*parsed.warnings, *([f"replan repeated calls already made: {', '.join(repeats)}; left out"]
                                   if repeats else [])]
    return ReplanResult(nodes=fresh, warnings=warnings, reason=reason, attempted=True, usage=completion.usage)


def _call(node: Node) -> str:
    return json.dumps([node.type, node.target, node.params, node.goal], sort_keys=True, ensure_ascii=False, default=str)


def _without_repeats(proposed: Sequence[Node], existing: Sequence[Node]) -> tuple[list[Node], list[str]]:
    """The proposed nodes without those that repeat a call the graph has made already (same
    tool or agent, same arguments): it succeeded, or it failed after its retries and would fail
    again. A repeat another proposed node depends on is kept, so no edge is left dangling."""
    made = {_call(n) for n in existing}
    needed = {d for n in proposed for d in n.depends_on}
    repeats = [n.id for n in proposed if _call(n) in made and n.id not in needed]
    return [n for n in proposed if n.id not in repeats], repeats
