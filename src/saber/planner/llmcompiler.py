"""LLMCompiler's numbered plan: ``1. search("x")`` … ``3. join()``.

Each numbered call becomes node ``n<k>``; ``$k`` in its arguments stays as a placeholder that
validation turns into a dependency on ``n<k>``. Positional arguments are matched to the tool's
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


def parse_llmcompiler(text: str, tools: Mapping[str, Tool], warnings: list[str]) -> list[RawNode] | None:
    """Raw nodes of a numbered plan, or None when ``text`` has no numbered call."""
    nodes: list[RawNode] = []
    matched = False
    for line in text.splitlines():
        match = _LINE.match(line)
        if not match:
            continue
        matched = True
        number, name, arg_text = match.groups()
        if name == "join":
            break
        call = _call_args(arg_text)
        if call is None:
            warnings.append(f"step {number}: cannot read the arguments of {name}({arg_text[:60]})")
            continue
        positional, keywords = call
        params, goal = _bind(name, positional, keywords, tools)
        nodes.append({"id": f"n{number}", "type": None, "tool": name, "agent": None, "goal": goal,
                      "params": params, "depends_on": None, "race_group": None})
    return nodes if matched else None


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
