"""What wraps the work of one request: its deadline and the grounding of its plans."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from saber.agent.context import Turn
from saber.agent.deadline import within_deadline
from saber.planner.grounding import GroundingContext, grounding


def grounding_for(turn: Turn) -> GroundingContext:
    """The sources a plan for ``turn`` may take values from: the query, the conversation, the preferences."""
    return GroundingContext(query=turn.query, tools=turn.tools, conversation=[m.content for m in turn.history],
                            preferences=turn.preferences, agents=turn.services.agent_descriptions(), language=turn.lang)


async def within_request(turn: Turn, work: Callable[[], Awaitable[str]], *, seconds: float, started: float | None = None) -> str:
    """``work()`` under the request's deadline, its plans grounded in what the request says."""
    with grounding(grounding_for(turn)):
        return await within_deadline(turn, work, seconds, started=started)
