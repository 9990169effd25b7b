"""How much one model call may generate, and for how long, by what the call is for.

Every call is bounded three ways: ``max_tokens`` (sent to the endpoint, and enforced on streams by
counting characters in case an endpoint ignores it), a total time (``timeout``: the whole call,
a stream included, however fast it keeps producing), and a stall time (``stall``: a stream that
produces nothing but whitespace for that long is cut).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from saber.config import Settings

Purpose = Literal["planner", "answer", "tool_arguments", "extraction"]
PURPOSES: tuple[Purpose, ...] = ("planner", "answer", "tool_arguments", "extraction")

DEFAULT_MAX_TOKENS: dict[Purpose, int] = {
    "planner": 768,
    "answer": 1024,
    "tool_arguments": 256,
    "extraction": 256,
}
"""A plan of a dozen nodes fits in ~600 tokens; arguments and extracted facts are short."""

CHARS_PER_TOKEN = 6
"""A generous characters-per-token bound: a stream longer than ``max_tokens * 6`` characters has
certainly passed ``max_tokens``, whatever the tokenizer (English ~4, Chinese ~1.5)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class GenerationLimits:
    max_tokens: int = 1024
    timeout: float = 60.0
    """Seconds the whole call may take, streams included."""
    stall: float = 30.0
    """Seconds a stream may go without producing visible text before it is cut."""

    @property
    def max_chars(self) -> int:
        return self.max_tokens * CHARS_PER_TOKEN

    def within(self, seconds: float | None) -> GenerationLimits:
        """These limits with the timeout shortened to ``seconds`` (the time a request has left)."""
        if seconds is None or seconds >= self.timeout:
            return self
        return replace(self, timeout=max(0.0, seconds))


def limits_from_settings(settings: Settings) -> dict[Purpose, GenerationLimits]:
    """The limits for each purpose: ``llm.max_tokens_<purpose>``, ``llm.timeout``, ``llm.stall_timeout``."""
    return {
        purpose: GenerationLimits(
            max_tokens=int(getattr(settings.llm, f"max_tokens_{purpose}", DEFAULT_MAX_TOKENS[purpose])),
            timeout=settings.llm.timeout,
            stall=settings.llm.stall_timeout,
        )
        for purpose in PURPOSES
    }


_ACCEPTS: dict[Any, bool] = {}


def max_tokens_kwarg(method: Any, value: int | None) -> dict[str, int]:
    """``{"max_tokens": value}`` when ``method`` takes a ``max_tokens`` keyword (or ``**kwargs``)."""
    key = getattr(method, "__func__", method)
    accepts = _ACCEPTS.get(key)
    if accepts is None:
        try:
            params = inspect.signature(method).parameters.values()
            accepts = any(p.name == "max_tokens" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
        except (TypeError, ValueError):
            accepts = False
        _ACCEPTS[key] = accepts
    return {"max_tokens": value} if accepts and value else {}
