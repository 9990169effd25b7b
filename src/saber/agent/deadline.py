"""The per-request deadline: by ``request_deadline`` seconds a request ends with the answer it has.

Model calls inside see the deadline (``GuardedModel`` shortens their time limit to what is left,
less a grace period), so a slow planner falls back to the rules and a slow answer is cut and
labelled before the hard stop. If the work is still running at the deadline, it is cancelled;
the answer is what was streamed so far, followed by a note saying the deadline was reached.
An empty answer is never returned silently either. Time spent waiting for an approval does not
count (``saber.llm.deadline.deadline_paused``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from saber.agent.context import Turn
from saber.events import Error, Token
from saber.llm.deadline import request_deadline


def grace(seconds: float) -> float:
    """Time kept back from model calls for what follows them (the rule answer, the final events)."""
    return min(3.0, seconds * 0.1)


async def within_deadline(turn: Turn, work: Callable[[], Awaitable[str]], seconds: float, *, started: float | None = None) -> str:
    """``await work()``, ended ``seconds`` after ``started`` (loop time; now when None)."""
    loop = asyncio.get_running_loop()
    end = (loop.time() if started is None else started) + seconds
    try:
        async with asyncio.timeout_at(end) as scope:
            with request_deadline(end - grace(seconds), stop=scope):  # an approval's wait moves both later
                return await _not_empty(turn, await work())
    except TimeoutError:
        if not scope.expired():
            raise
    await turn.emit(Error(message=f"the request reached its deadline of {seconds:g}s", where="deadline"))
    partial = "".join(turn.streamed).rstrip()
    if turn.lang == "zh":
        note = f"（请求已到时限 {seconds:g} 秒，回答到此为止。）" if partial else f"抱歉，请求在时限 {seconds:g} 秒内没有完成，没有可用的回答。"
    else:
        note = (f"(The request reached its {seconds:g}s deadline; the answer stops here.)" if partial
                else f"Sorry, the request did not finish within its {seconds:g}s deadline, so there is no answer.")
    await turn.emit(Token(content=f"\n\n{note}" if partial else note))
    return f"{partial}\n\n{note}" if partial else note


async def _not_empty(turn: Turn, answer: str) -> str:
    """An empty answer is never returned silently: an ``error`` event and a sentence say so."""
    if answer.strip():
        return answer
    await turn.emit(Error(message="the request produced no answer", where="answer"))
    text = "抱歉，这次没有得到任何回答。" if turn.lang == "zh" else "Sorry, this request produced no answer."
    await turn.emit(Token(content=text))
    return text
