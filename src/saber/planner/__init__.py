"""The planner: a model's task graph (any shape it writes) → validated ``Node``s.

- ``parse_plan(text, tools, agents=...)`` → ``ParsedPlan(nodes, format, warnings)``; raises
  ``PlanParseError`` only when nothing usable is found (``[]`` is a valid "no tool needed").
- ``substitute_placeholders(params, results) -> dict``: for the graph runtime, just before a
  node runs. ``results`` maps node id → result; ``"${n1}"`` (also ``$n1``, ``{{n1}}``) is
  replaced by node n1's result, ``"${n1.city}"`` by a field of it. Then validate the arguments
  with ``Tool.validate`` (placeholder fields were left unchecked at parse time). Raises
  ``PlaceholderError`` when an upstream node has no result.
- ``rule_plan(query, tools, ...)``: keyword planning with no model (or when parsing fails).
- ``replan(query, nodes, tools, model, budget=ReplanBudget(max_replans=2), reason=...)``.
- ``build_planner_prompt`` and ``plan_response_format`` for asking a model.

The names load their modules on first use: the router needs only ``saber.lexical.keywords``, and a
query answered by one tool must not pay for the parsers (json-repair, the pythonic reader).
"""

from typing import TYPE_CHECKING

from saber._lazy import lazy_exports

if TYPE_CHECKING:
    from saber.graph.placeholders import PlaceholderError, references, substitute_placeholders
    from saber.planner.parse import parse_plan, plan_from_json
    from saber.planner.prompt import build_planner_prompt, detect_language
    from saber.planner.replanner import (
        ReplanBudget,
        ReplanResult,
        build_replan_prompt,
        describe_state,
        replan,
    )
    from saber.planner.result import ParsedPlan, PlanParseError
    from saber.planner.rules import fill_from_preferences, rule_nodes, rule_plan
    from saber.planner.schema import plan_json_schema, plan_response_format

__all__ = [
    "ParsedPlan",
    "PlaceholderError",
    "PlanParseError",
    "ReplanBudget",
    "ReplanResult",
    "build_planner_prompt",
    "build_replan_prompt",
    "describe_state",
    "detect_language",
    "fill_from_preferences",
    "parse_plan",
    "plan_from_json",
    "plan_json_schema",
    "plan_response_format",
    "references",
    "replan",
    "rule_nodes",
    "rule_plan",
    "substitute_placeholders",
]

_HOMES = {
    "PlaceholderError": "saber.graph.placeholders", "references": "saber.graph.placeholders",
    "substitute_placeholders": "saber.graph.placeholders",
    "parse_plan": "saber.planner.parse", "plan_from_json": "saber.planner.parse",
    "build_planner_prompt": "saber.planner.prompt", "detect_language": "saber.planner.prompt",
    "ReplanBudget": "saber.planner.replanner", "ReplanResult": "saber.planner.replanner",
    "build_replan_prompt": "saber.planner.replanner", "describe_state": "saber.planner.replanner",
    "replan": "saber.planner.replanner",
    "ParsedPlan": "saber.planner.result", "PlanParseError": "saber.planner.result",
    "fill_from_preferences": "saber.planner.rules", "rule_nodes": "saber.planner.rules",
    "rule_plan": "saber.planner.rules",
    "plan_json_schema": "saber.planner.schema", "plan_response_format": "saber.planner.schema",
}


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__)
