"""``parse_plan``: a planner model's text → validated nodes, whatever shape the model used.

Tiers, in order: cleaning (reasoning blocks, template tokens); text tool-call dialects of open
models (recognised by their markers); JSON in any of the known shapes, found inside fences or
prose and repaired when broken; LLMCompiler's numbered plan. Then validation (``validate.py``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from saber.graph.node import Node
from saber.llm.text_tool_calls import extract_text_tool_calls
from saber.planner.clean import strip_reasoning, strip_template_tokens
from saber.planner.extract import find_plan
from saber.planner.llmcompiler import parse_llmcompiler
from saber.planner.result import ParsedPlan, PlanParseError
from saber.planner.shapes import RawNode, from_tool_calls
from saber.planner.validate import validate_nodes
from saber.tools.base import Tool


def parse_plan(
    text: str,
    tools: Mapping[str, Tool],
    *,
    agents: Mapping[str, str] | None = None,
    existing: Mapping[str, Node] | None = None,
    limit: int | None = None,
) -> ParsedPlan:
    """Read a planner's output into validated nodes.

    ``tools`` is the registry snapshot, ``agents`` the sub-agents allowed (name → description;
    sub_agent nodes naming others are dropped). ``existing`` and ``limit`` serve replanning:
    new ids avoid the existing ones, new nodes may depend on them, at most ``limit`` are kept.

    Returns a ParsedPlan (``nodes == []`` means the model said no tool is needed). Raises
    PlanParseError when no plan is found, or when the plan had nodes and none survived.
    """
    if not isinstance(text, str):
        raise PlanParseError(f"planner output must be text, got {type(text).__name__}")
    warnings: list[str] = []
    cleaned, had_reasoning = strip_reasoning(strip_template_tokens(text))
    if had_reasoning:
        warnings.append("removed a reasoning block")
    shape, raw, repaired = _read(cleaned, tools, warnings)
    if raw is None:
        reason = "no plan found in the planner output" if cleaned.strip() else "the planner output is empty"
        raise PlanParseError(reason, warnings=warnings, text=text)
    checked = validate_nodes(raw, tools, agents=agents, existing=existing, limit=limit)
    warnings.extend(checked.warnings)
    if raw and not checked.nodes:
        raise PlanParseError("no usable node: " + "; ".join(checked.dropped.values()), warnings=warnings, text=text)
    return ParsedPlan(nodes=checked.nodes, format="repaired" if repaired else shape, warnings=warnings,
                      shape=shape, repaired=repaired)


def _read(text: str, tools: Mapping[str, Tool], warnings: list[str]) -> tuple[str, list[RawNode] | None, bool]:
    """``(shape, raw nodes, repaired)``; raw nodes are None when nothing was recognised."""
    dialect = extract_text_tool_calls(text)
    if dialect is not None and dialect.calls:
        warnings.extend(dialect.warnings)
        return dialect.format, from_tool_calls(dialect.calls), False
    found = find_plan(text)
    if found is not None:
        if found.truncated:
            warnings.append("the plan was cut off; kept its complete nodes")
        elif found.repaired:
            warnings.append("repaired broken JSON")
        return found.shape.name, found.shape.nodes, found.repaired
    compiled = parse_llmcompiler(text, tools, warnings)
    if compiled is not None:
        return "llmcompiler", compiled, False
    if dialect is not None:
        warnings.extend(dialect.warnings)
    return "", None, False


def plan_from_json(value: Any, tools: Mapping[str, Tool], *, agents: Mapping[str, str] | None = None) -> ParsedPlan:
    """A plan already decoded (structured output, native tool calls turned into dicts)."""
    return parse_plan(json.dumps(value, ensure_ascii=False), tools, agents=agents)
