"""``parse_plan``: a planner model's text → validated nodes, whatever shape the model used.

Tiers, in order: cleaning (reasoning blocks, template tokens); pythonic calls making up the
whole text, a fence or a Llama marker's block (``pythonic.py``); text tool-call dialects of open
models (recognised by their markers); JSON in any of the known shapes, found inside fences or
prose and repaired when broken; pythonic calls picked out of prose; LLMCompiler's numbered plan. Each plan found is validated
(``validate.py``) in that order until one keeps a node.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from saber.graph.node import Node
from saber.llm.text_tool_calls import extract_text_tool_calls
from saber.planner.answer_template import check_template
from saber.planner.clean import strip_reasoning, strip_template_tokens
from saber.planner.extract import find_plans
from saber.planner.grounding import ground_validated
from saber.planner.llmcompiler import parse_llmcompiler
from saber.planner.pythonic import PythonicPlan, parse_pythonic
from saber.planner.result import ParsedPlan, PlanParseError
from saber.planner.shapes import RawNode, from_tool_calls
from saber.planner.validate import Validated, norm_id, validate_nodes
from saber.tools.base import Tool

log = logging.getLogger(__name__)

_CUT_NOTE = "the plan was cut off; kept its complete nodes"
_CLOSING_TAGS: dict[str, tuple[str, ...]] = {"hermes": ("</tool_call>",), "qwen_xml": ("</function>", "</tool_call>")}
"""Dialects whose calls end in a tag: a text ending in one has its last call closed."""

MAX_PLAN_NODES = 64
"""Default cap on a plan's nodes (the agent passes the ``planner_max_nodes`` setting)."""


def parse_plan(
    text: str,
    tools: Mapping[str, Tool],
    *,
    agents: Mapping[str, str] | None = None,
    existing: Mapping[str, Node] | None = None,
    limit: int | None = None,
    max_nodes: int = MAX_PLAN_NODES,
    partial: bool = False,
) -> ParsedPlan:
    """Read a planner's output into validated nodes.

    ``tools`` is the registry snapshot, ``agents`` the sub-agents allowed (name → description;
    sub_agent nodes naming others are dropped). ``existing`` and ``limit`` serve replanning:
    new ids avoid the existing ones, new nodes may depend on them, at most ``limit`` are kept.

    Every plan-shaped value in the text is a candidate, in order (text tool calls, JSON in
    fences, JSON in the text, a numbered plan): the first that keeps at least one node after
    validation is the plan, and each one skipped before it is noted in ``warnings`` (a model
    often mentions an unavailable tool or echoes the node format before its plan).

    A candidate with more than ``max_nodes`` nodes keeps its first ``max_nodes``, with a warning.

    ``partial=True`` reads the start of an output still streaming: nothing that needs the whole
    plan is decided (see ``validate_nodes``), and ``last_node_closed`` says whether its last node
    can still grow.

    Returns a ParsedPlan (``nodes == []`` means the model said no tool is needed: an explicit
    ``[]`` and no usable candidate). Raises PlanParseError when no plan is found, when every
    candidate had nodes and none survived, or when reading the text failed in any other way
    (nesting too deep for the JSON decoder, say): a caller falls back on one exception.
    """
    if not isinstance(text, str):
        raise PlanParseError(f"planner output must be text, got {type(text).__name__}")
    try:
        return _parse(text, tools, agents=agents, existing=existing, limit=limit, max_nodes=max_nodes, partial=partial)
    except PlanParseError:
        raise
    except RecursionError:
        raise PlanParseError("the planner output is nested too deeply to read", text=text[:2000]) from None
    except Exception as exc:  # a bug in a parsing tier must not escape as anything but a parse failure
        log.exception("parsing the planner output failed")
        raise PlanParseError(f"the planner output could not be read ({type(exc).__name__}: {exc})",
                             text=text[:2000]) from exc


def _parse(text: str, tools: Mapping[str, Tool], *, agents: Mapping[str, str] | None,
           existing: Mapping[str, Node] | None, limit: int | None, max_nodes: int, partial: bool) -> ParsedPlan:
    warnings: list[str] = []
    cleaned, had_reasoning = strip_reasoning(strip_template_tokens(text))
    if had_reasoning:
        warnings.append("removed a reasoning block")
    empty: _Candidate | None = None
    failed: list[tuple[_Candidate, Validated]] = []
    tried: set[str] = set()
    for candidate in _candidates(cleaned, tools, agents or {}, warnings, max_nodes):
        if len(candidate.raw) > max_nodes:
            candidate = _capped(candidate, max_nodes)
        if not candidate.raw:
            empty = empty or candidate
            continue
        if failed:  # the same value again (a fence is also part of the whole text): validated already
            key = _key(candidate.raw)
            if key in tried:
                continue
            tried.add(key)
        checked = validate_nodes(candidate.raw, tools, agents=agents, existing=existing, limit=limit, partial=partial)
        checked = ground_validated(checked, existing=existing,  # copied example values, ignored entities
                                   new_plan=not candidate.cut and not (existing or partial) and limit is None)
        if checked.nodes:
            skipped = [f"skipped an earlier {c.shape} candidate with no usable node: " + "; ".join(v.dropped.values())
                       for c, v in failed]
            whole = not (partial or candidate.cut or existing or limit is not None)
            answer, dropped = check_template(candidate.answer if whole else None,
                                             [norm_id(r.get("id")) for r in candidate.raw], [n.id for n in checked.nodes])
            notes = [*warnings, *skipped, *candidate.notes, *checked.warnings, *([dropped] if dropped else [])]
            return _plan(candidate, notes, checked.nodes, answer)
        if not failed:
            tried.add(_key(candidate.raw))
        failed.append((candidate, checked))
    if empty is not None:
        skipped = [f"skipped a {c.shape} candidate with no usable node: " + "; ".join(v.dropped.values())
                   for c, v in failed]
        return _plan(empty, [*warnings, *skipped, *empty.notes], [])
    if failed:
        details = [w for c, v in failed for w in (*c.notes, *v.warnings)]
        raise PlanParseError("no usable node: " + "; ".join(failed[0][1].dropped.values()),
                             warnings=[*warnings, *details], text=text)
    rejected = [w.removeprefix("rejected a pythonic call: ") for w in warnings if w.startswith("rejected a pythonic call: ")]
    reason = "no plan found in the planner output" if cleaned.strip() else "the planner output is empty"
    reason = f"no usable call: {rejected[0]}" if rejected else reason
    raise PlanParseError(reason, warnings=warnings, text=text)


@dataclass(frozen=True, kw_only=True, slots=True)
class _Candidate:
    shape: str
    raw: list[RawNode]
    repaired: bool = False
    notes: tuple[str, ...] = ()
    """Warnings that belong to this candidate (a repair, a cut-off plan, a dialect's quirks)."""
    cut: tuple[str, ...] = ()
    """Why the candidate is not the whole plan (see ``ParsedPlan.cut``)."""
    dropped: int = 0
    closed: bool = False
    answer: str | None = None
    """The reply the model wrote after its nodes, unchecked (``answer_template``)."""


def _plan(candidate: _Candidate, warnings: list[str], nodes: list[Node], answer: str | None = None) -> ParsedPlan:
    return ParsedPlan(nodes=nodes, format="repaired" if candidate.repaired else candidate.shape, warnings=warnings,
                      shape=candidate.shape, repaired=candidate.repaired, cut="; ".join(candidate.cut) or None,
                      dropped_nodes=candidate.dropped, last_node_closed=candidate.closed, answer=answer)


def _key(raw: list[RawNode]) -> str:
    return json.dumps(raw, sort_keys=True, ensure_ascii=False, default=str)


def _capped(candidate: _Candidate, max_nodes: int) -> _Candidate:
    note = (f"the plan has {len(candidate.raw)} nodes, over the limit of {max_nodes} (planner.max_nodes); "
            f"kept the first {max_nodes}")
    over = len(candidate.raw) - max_nodes
    return replace(candidate, raw=candidate.raw[:max_nodes], notes=(*candidate.notes, note),
                   cut=(*candidate.cut, f"it has {len(candidate.raw)} nodes, over the limit of {max_nodes}"),
                   dropped=candidate.dropped + over)


def _pythonic(found: PythonicPlan | None, warnings: list[str]) -> Iterator[_Candidate]:
    if found is not None and found.raw:
        yield _Candidate(shape=found.shape, raw=found.raw, notes=found.warnings)
    elif found is not None:
        warnings.extend(found.warnings)  # every call rejected: say why if nothing else is found


def _candidates(text: str, tools: Mapping[str, Tool], agents: Mapping[str, str],
                warnings: list[str], max_nodes: int) -> Iterator[_Candidate]:
    """Plan-shaped values in ``text``, lazily, in the order they are trusted."""
    strict = parse_pythonic(text, tools, agents)  # nothing but calls: as sure as a dialect's markers
    yield from _pythonic(strict, warnings)
    dialect = extract_text_tool_calls(text)
    if dialect is not None and dialect.calls:
        closing = _CLOSING_TAGS.get(dialect.format)
        yield _Candidate(shape=dialect.format, raw=from_tool_calls(dialect.calls), notes=tuple(dialect.warnings),
                         closed=closing is not None and text.rstrip().endswith(closing))
    found_any = False
    for found in find_plans(text):
        found_any = True
        note = (_CUT_NOTE + (" (an unfinished one was left out)" if found.unfinished else ""),) if found.truncated \
            else ("repaired broken JSON",) if found.repaired else ()
        yield _Candidate(shape=found.shape.name, raw=found.shape.nodes, repaired=found.repaired, notes=note,
                         cut=("the output ends inside the plan",) if found.truncated else (),
                         dropped=int(found.unfinished), closed=found.closed, answer=found.shape.answer)
    if strict is None:  # calls picked out of prose: after the JSON ones
        yield from _pythonic(parse_pythonic(text, tools, agents, strict=False), warnings)
    compiled_notes: list[str] = []
    compiled = parse_llmcompiler(text, tools, compiled_notes, max_steps=max_nodes)
    if compiled is not None:
        yield _Candidate(shape="llmcompiler", raw=compiled, notes=tuple(compiled_notes))
    elif not found_any and dialect is not None and not dialect.calls:
        warnings.extend(dialect.warnings)


def plan_from_json(value: Any, tools: Mapping[str, Tool], *, agents: Mapping[str, str] | None = None) -> ParsedPlan:
    """A plan already decoded (structured output, native tool calls turned into dicts)."""
    return parse_plan(json.dumps(value, ensure_ascii=False), tools, agents=agents)
