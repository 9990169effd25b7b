"""Tool mode's guard on a model-chosen call: grounded in the request, like a plan.

A call the request contradicts — a place it does not name (``get_time("Asia/Shanghai")`` for
"东京现在几点"), a value copied from a prompt's example, a conversion's places swapped
(``grounded_roles``) — is not run as is. The model is asked once
more, told why; a call that then fits is run (a ``plan`` event says it was corrected). If the
model keeps contradicting the request, the rules' call (its values taken from the request itself)
runs, and the answer ends with a note saying so. When the query names places, only the query
grounds a place: a preferred city or an earlier turn does not make another place right.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from saber.agent.context import Turn
from saber.agent.grounded_roles import check_roles
from saber.events import Plan
from saber.graph.node import Node
from saber.planner.grounding import ELSEWHERE, GroundingContext, current_grounding, ground_call

AskAgain = Callable[[Node, str], Awaitable[dict[str, Any] | None]]
"""Asks the model again for a call of ``node``'s tool, told ``reason``; its arguments, or None."""


@dataclass(frozen=True, kw_only=True, slots=True)
class GroundedCall:
    """The call to run (None: no call can be made from the request) and what the answer must add."""

    node: Node | None
    note: str = ""
    """Said at the end of the answer when the model's call was replaced by the rules'."""


async def ground_tool_call(turn: Turn, node: Node, ask_again: AskAgain) -> GroundedCall:
    """``node`` when the request supports it; else the model's second call when that one does;
    else the rules' repair of ``node`` (or None), with a note for the answer."""
    context = _query_first(current_grounding())
    if context is None:
        return GroundedCall(node=node)
    checked, warnings = _check(node, context)
    if not warnings:
        return GroundedCall(node=node)
    first = list(warnings)
    reason = "; ".join(_for_model(w) for w in warnings)
    arguments = await ask_again(node, reason)
    if arguments is not None:
        again = dataclasses.replace(node, params=arguments)
        _, more = _check(again, context)
        if not more:
            said = f"{node.id} {node.tool}: asked again with the reason, the model called {_call(again)}"
            found = [_TAIL.sub("", w) for w in warnings]  # the rules' repair was not needed
            await turn.emit(Plan(format="tool", nodes=[again.to_dict()], warnings=[*found, said], source="grounding"))
            return GroundedCall(node=again)
        warnings = [*warnings, *(f"asked again: {w}" for w in more)]
    ran = f"the rules' call {_call(checked)} runs" if checked is not None else "no call can be made from the request"
    warnings.append(f"{node.id} {node.tool}: asking the model again did not fix its call; {ran}")
    await turn.emit(Plan(format="tool", nodes=[checked.to_dict()] if checked is not None else [], warnings=warnings,
                         source="grounding"))
    return GroundedCall(node=checked, note=_note(turn.lang, node, checked, context, first))


def _check(node: Node, context: GroundingContext) -> tuple[Node | None, list[str]]:
    """The grounding's check of ``node``, then the roles of its places (``grounded_roles``)."""
    checked, warnings = ground_call(node, context)
    if checked is None:
        return None, warnings
    checked, more = check_roles(checked, context)
    return checked, [*warnings, *more]


def _query_first(context: GroundingContext | None) -> GroundingContext | None:
    """When the query names places, the query alone grounds the call (not the preferences or the history)."""
    if context is None or not context.named_places:
        return context
    return dataclasses.replace(context, conversation=(), preferences={})


_TAIL = re.compile(r"; the rules' .* used instead$")
_HEAD = re.compile(r"^\S+ (?:dropped: |\S+: )")


def _for_model(warning: str) -> str:
    """A grounding warning as the reason told to the model (without node ids or the rules' repair)."""
    return _TAIL.sub("", _HEAD.sub("", warning))


def _call(node: Node) -> str:
    return f"{node.tool}({', '.join(f'{k}={v!r}' for k, v in node.params.items())})"


def _note(lang: str, chosen: Node, ran: Node | None, context: GroundingContext, reasons: list[str]) -> str:
    """The answer's last paragraph: which call the model wanted, and what ran instead and why.
    ``reasons`` are the first check's warnings: "the request names …" when each was about a place
    the request does not name; else (English) the reasons themselves."""
    elsewhere = all(ELSEWHERE in r for r in reasons)
    places = ("、" if lang == "zh" else ", ").join(context.named_places) if elsewhere else ""
    if lang == "zh":
        why = f"（请求中提到的是 {places}）" if places else ""
        done = f"改用根据请求得出的调用 {_call(ran)}" if ran is not None else "请求中没有可用的值，因此没有调用工具"
        return f"注：模型给出的调用 {_call(chosen)} 与请求不符{why}，再次询问也未改正；{done}。"
    why = f"the request names {places}" if places else "; ".join(_for_model(r) for r in reasons)
    done = (f"the call {_call(ran)}, made from the request itself, was run instead" if ran is not None
            else "the request gives no value for it, so no tool was called")
    return f"Note: the model's call {_call(chosen)} contradicted the request ({why}), and asking it again did not fix it; {done}."
