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
"""

from saber.graph.placeholders import PlaceholderError, references, substitute_placeholders
from saber.planner.parse import parse_plan, plan_from_json
from saber.planner.prompt import build_planner_prompt, detect_language
from saber.planner.replan import ReplanBudget, ReplanResult, build_replan_prompt, describe_state, replan
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
