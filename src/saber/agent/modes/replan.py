"""The agent's replanner (LLMCompiler's joiner, made cheap): the model is asked for replacement
nodes when a node fails, or when the graph has drained and its results cannot answer.

"Cannot answer" is decided without a model: a failed node no replan has been asked about yet,
a node that finished with an empty result, or what the plan itself left out (it was cut off, or
validation refused steps: an unknown tool), each asked about once. A graph whose every node returned something ends
without a model call (the replanner declines, which spends no replan and emits no event). Each
model call is one replan: bounded by ``graph.max_replan``, its tokens added to the turn's usage
and counted in ``done``'s ``usage.replans``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from saber.agent.context import Turn
from saber.graph.agents import Replanner, ReplanRequest
from saber.graph.node import Node, NodeStatus
from saber.planner import ReplanBudget, replan


def _empty(result: Any) -> bool:
    if isinstance(result, str):
        return not result.strip()
    return result is None or (isinstance(result, list | dict | tuple) and not result)


def unanswered(nodes: Sequence[Node]) -> dict[str, str]:
    """What in a graph cannot answer: failed nodes and empty results, by id, with why."""
    gaps: dict[str, str] = {}
    for n in nodes:
        if n.status is NodeStatus.FAILED:
            gaps[n.id] = f"{n.id} failed: {n.error}"
        elif n.status is NodeStatus.DONE and _empty(n.result):
            gaps[n.id] = f"{n.id} ({n.target}) returned nothing"
    return gaps


def model_replanner(turn: Turn) -> Replanner:
    """The replanning hook for this turn's graph runtime (the turn must have a model)."""
    services = turn.services
    budget = ReplanBudget(max_replans=services.graph_config().max_replan,
                          max_new_nodes=services.settings.graph.replan_max_nodes)
    descriptions = services.agent_descriptions()
    asked: set[str] = set()
    """Nodes a replan was already asked about: not asked about twice."""

    async def replanner(request: ReplanRequest) -> Sequence[Node] | None:
        plan_gaps = {k: v for k, v in turn.plan_report.gaps.items() if k not in asked}
        gaps = {k: v for k, v in unanswered(request.nodes).items() if k not in asked} | plan_gaps
        if not gaps:
            return None
        asked.update(gaps)
        reason = (request.detail if request.reason == "failure" and not plan_gaps else "; ".join(gaps.values()))
        result = await replan(turn.query, request.nodes, turn.tools, turn.model, budget=budget, reason=reason,
                              agents=descriptions, language=turn.lang)
        turn.add_usage(result.usage)
        turn.replans += int(result.attempted)
        turn.plan_replanned = turn.plan_replanned or bool(plan_gaps and result.nodes)
        return result.nodes

    return replanner
