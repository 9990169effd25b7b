"""The reply a planner may write ahead: ``{"answer": "… $n1 …"}`` after its nodes.

For a request whose reply only states what the tools return (the weather in three cities, the
time in the capital of Japan), the planner prompt lets the model end its plan with the reply,
each result as a placeholder (as ReWOO's plan names its evidence ``#E1``). The agent fills it in
when every step succeeded instead of asking the model again; otherwise the generator writes the
answer as it always does. So a template is kept only when it is safe to fill blindly:

* the plan is the one the model wrote: the same node ids, in the same order (validation or
  grounding dropping, renaming or adding a node means the reply no longer matches the steps);
* every placeholder names one of those nodes (``$n1``, ``${n1}``; a ``$n7`` naming none, or a
  path into a result, drops the template);
* it names at least one result (a reply with none was written without the results).

Placeholders are matched against the plan's own ids, so ``"首都是$n1，"`` and ``"是$n1的"`` both
name ``n1`` (a ``\\w`` after ``$n1`` would otherwise read as part of the id).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

ANSWER_KEY = "answer"
_CANONICAL = re.compile(r"\$\{(?P<id>[A-Za-z_][\w-]*)\}")
_NODE_LIKE = re.compile(r"\$\{[^}\s]*\}|\$n\d+")
"""What reads as a placeholder after the plan's ids are taken out: one that names no node."""
_NODE_KEYS = ("tool", "tool_name", "agent", "type", "name", "function", "action", "params", "arguments")


def answer_item(value: Any) -> str | None:
    """The template of a plan item that is the reply rather than a node (``{"answer": "…"}``)."""
    if not isinstance(value, Mapping) or any(k in value for k in _NODE_KEYS):
        return None
    text = value.get(ANSWER_KEY)
    return text if isinstance(text, str) and text.strip() else None


def check_template(template: str | None, written: Sequence[str | None], kept: Sequence[str]) -> tuple[str | None, str | None]:
    """``(template, warning)``: the template with its placeholders in the canonical ``${id}`` form,
    or None and why it was dropped (None, None when there was none).

    ``written`` are the ids the model wrote on its nodes (as ``validate.norm_id`` reads them),
    ``kept`` the validated plan's ids."""
    if template is None:
        return None, None
    if list(written) != list(kept):
        return None, "dropped the plan's answer template: its steps were changed while reading the plan"
    pattern = _id_pattern(kept)
    canonical = pattern.sub(lambda m: "${" + (m.group("b") or m.group("s")) + "}", template) if pattern else template
    stray = _NODE_LIKE.findall(_CANONICAL.sub("", canonical))
    if stray:
        return None, f"dropped the plan's answer template: {stray[0]} names no step of the plan"
    if not _CANONICAL.search(canonical):
        return None, "dropped the plan's answer template: it names no step's result"
    return canonical, None


def fill_template(template: str, results: Mapping[str, str]) -> list[str] | None:
    """The reply in pieces (text, then a result, then text …; empty pieces left out), or None when
    a placeholder names a node with no result in ``results``."""
    pieces: list[str] = []
    at = 0
    for match in _CANONICAL.finditer(template):
        value = results.get(match.group("id"))
        if value is None:
            return None
        pieces += [template[at:match.start()], value]
        at = match.end()
    pieces.append(template[at:])
    return [p for p in pieces if p]


def _id_pattern(ids: Sequence[str]) -> re.Pattern[str] | None:
    if not ids:
        return None
    names = "|".join(re.escape(i) for i in sorted(ids, key=len, reverse=True))
    return re.compile(rf"\$\{{\s*(?P<b>{names})\s*\}}|\$(?P<s>{names})(?![A-Za-z0-9_-])")
