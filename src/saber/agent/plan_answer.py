"""The answer the planner wrote ahead (``ParsedPlan.answer``), filled with the steps' results.

Used instead of a generator call only when nothing could make it wrong: the plan was the
model's, whole and unchanged (``planner.answer_template`` checked that), no replan added or
changed a step, every step succeeded, and every placeholder names a result short enough to be
shown whole. Otherwise the generator writes the answer as it always does. The answer is
streamed as ``token`` events like a model's, and ``done`` says where it came from
(``answer_template``): the model's words, written before the results, with the results put in.
"""

from __future__ import annotations

from saber.agent.context import Turn
from saber.agent.observations import as_text
from saber.events import Token
from saber.graph.result import RunResult
from saber.planner.answer_template import fill_template

MAX_FILLED_CHARS = 4000
"""A longer result is not put into the template: the generator reads (a cut of) it instead."""


def usable_template(turn: Turn, run: RunResult) -> str | None:
    """The turn's answer template when this run may be answered with it, else None."""
    report = turn.plan_report
    if turn.plan_answer is None or not turn.services.settings.planner.answer_template:
        return None
    if not run.ok or run.replans or turn.plan_replanned or report.truncated or report.stopped or report.refused:
        return None
    return turn.plan_answer


async def template_answer(turn: Turn, run: RunResult) -> str | None:
    """Stream the filled template and return it, or None (nothing emitted) when it may not be used."""
    template = usable_template(turn, run)
    if template is None:
        return None
    results = {i: as_text(r, MAX_FILLED_CHARS + 1) for i, r in run.results.items() if r is not None}
    pieces = fill_template(template, {i: t for i, t in results.items() if len(t) <= MAX_FILLED_CHARS})
    if pieces is None:
        return None
    for piece in pieces:
        await turn.emit(Token(content=piece))
    turn.answered_by_model = True  # the model's words; ``answered_by_template`` says the rest
    turn.answered_by_template = True
    return "".join(pieces)
