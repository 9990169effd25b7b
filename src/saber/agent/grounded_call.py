"""Tool mode's guard on a model-chosen call: no argument copied from a prompt's example."""

from __future__ import annotations

from saber.agent.context import Turn
from saber.events import Plan
from saber.graph.node import Node
from saber.planner.grounding import current_grounding, ground_call


async def ground_tool_call(turn: Turn, node: Node) -> Node | None:
    """``node`` with copied example values replaced by the rules' (a ``plan`` event with the
    warning says so), or None — after the warning — when a copied value has no replacement."""
    context = current_grounding()
    if context is None:
        return node
    checked, warnings = ground_call(node, context)
    if warnings:
        nodes = [checked.to_dict()] if checked is not None else []
        await turn.emit(Plan(format="tool", nodes=nodes, warnings=warnings, source="grounding"))
    return checked
