"""LLMCompiler's numbered plan: ``1. search("x")`` … ``3. join()``.

Each numbered call becomes node ``n<k>``. ``$k`` (or ``${k}``) naming an earlier step read here
is rewritten ``${n<k>}`` in the arguments, which validation turns into a dependency; in a
sub-agent's goal the text stays as written and the step becomes a dependency. This is the only
shape where a bare ``$<digits>`` names a node: ``$1000`` (no such step) or ``$2`` in step 1 (not an
earlier step) are amounts and stay text. Positional arguments are matched to the tool's
parameters in schema order (a sub-agent's first positional argument is its goal).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any

from saber.planner.shapes import RawNode
from saber.tools.base import Tool

_LINE = re.compile(r"^\s*(?:Step\s*)?(\d+)[.):]\s*([A-Za-z_][\w.-]*)\s*\((.*)\)\s*(?:<END_OF_PLAN>)?\s*$")
_BARE_REF = re.compile(r"(?<![\"'\w$])\$\{?(\d+)\}?")
_STEP_REF = re.compile(r"\$(?:\{(\d+)\}|(\d+)\b)")


def parse_llmcompiler(text: str, tools: Mapping[str, Tool], warnings: list[str],
                      max_steps: int | None = None) -> list[RawNode] | None:
    """Raw nodes of a numbered plan, or None when ``text`` has no numbered call.

    Linear in the text: each line is read once, and the steps read so far are kept in a set.
    With ``max_steps``, reading stops after that many steps (with a warning)."""
    nodes: list[RawNode] = []
    steps: set[int] = set()
    matched = False
    for line in text.splitlines():
        match = _LINE.match(line)
        if not match:
            continue
        matched = True
        number, name, arg_text = match.groups()
        if name == "join":
            break
        if max_steps is not None and len(nodes) >= max_steps:
            warnings.append(f"the numbered plan has more than {max_steps} steps, over the limit (planner.max_nodes); "
                            f"kept the first {max_steps}")
            break
        call = _call_args(arg_text)
        if call is None:
            warnings.append(f"step {number}: cannot read the arguments of {name}({arg_text[:60]})")
            continue
        positional, keywords = call
        params, goal = _bind(name, positional, keywords, tools)
        earlier = _Earlier(steps, int(number))
        params, refs = _step_refs(params, earlier)
        _, goal_refs = _step_refs(goal, earlier)
        steps.add(int(number))
        nodes.append({"id": f"n{number}", "type": None, "tool": name, "agent": None, "goal": goal,
                      "params": params, "depends_on": [*refs, *(r for r in goal_refs if r not in refs)] or None,
                      "race_group": None})
    return nodes if matched else None


class _Earlier:
    """The steps read before step ``number`` with a lower number, without copying the set."""

    def __init__(self, steps: set[int], number: int) -> None:
        self.steps = steps
        self.number = number

    def __contains__(self, k: object) -> bool:
        return isinstance(k, int) and k < self.number and k in self.steps


def _step_refs(value: Any, steps: _Earlier | set[int]) -> tuple[Any, list[str]]:
    """``value`` with ``$k``/``${k}`` naming one of ``steps`` rewritten ``${nk}``, and those node ids."""
    found: list[str] = []

    def one(match: re.Match[str]) -> str:
        k = int(match.group(1) or match.group(2))
        if k not in steps:
            return match.group(0)
        if f"n{k}" not in found:
            found.append(f"n{k}")
        return "${n" + str(k) + "}"

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            return _STEP_REF.sub(one, item) if "$" in item else item
        if isinstance(item, list):
            return [walk(v) for v in item]
        if isinstance(item, dict):
            return {k: walk(v) for k, v in item.items()}
        return item

    return walk(value), found


def _call_args(arg_text: str) -> tuple[list[Any], dict[str, Any]] | None:
    for candidate in (arg_text, _BARE_REF.sub(lambda m: f'"${m.group(1)}"', arg_text)):
        try:
            expr = ast.parse(f"f({candidate})", mode="eval").body
            assert isinstance(expr, ast.Call)
            positional = [ast.literal_eval(a) for a in expr.args]
            keywords = {kw.arg: ast.literal_eval(kw.value) for kw in expr.keywords if kw.arg}
            return positional, keywords
        except (SyntaxError, ValueError):
            continue
    return None


def _bind(name: str, positional: list[Any], keywords: dict[str, Any], tools: Mapping[str, Tool]) -> tuple[dict[str, Any], str]:
    tool = tools.get(name)
    if tool is None:  # a sub-agent or an unknown tool: the first argument is the goal
        goal = str(positional[0]) if positional and isinstance(positional[0], str) else ""
        extra = {f"arg{i}": v for i, v in enumerate(positional[1:] if goal else positional, start=1)}
        return {**extra, **keywords}, goal
    names = [p.name for p in tool.parameters]
    params = dict(zip(names, positional, strict=False))
    if len(positional) > len(names):
        params.update({f"arg{i}": v for i, v in enumerate(positional[len(names):], start=len(names))})
    params.update(keywords)
    return params, ""
