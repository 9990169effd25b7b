"""Whether ``saber ask`` failed: its exit code and the one error line, read from the events.

An ``error`` event is not by itself a failure. Many say what the request recovered from: the
endpoint has no function calling so a JSON prompt was used, a tool failed and the answer says so,
memories could not be recalled. The request failed (exit 1) when the answer is not what was asked
for: the configured model did not write it (it failed; or there is no model, and an error
happened), or the request itself broke (the agent, its deadline, its checkpoints).
"""

from __future__ import annotations

from typing import Any

FATAL = frozenset({"agent", "deadline", "checkpoint"})
"""Where an error means the request broke, whoever wrote the answer."""


class Outcome:
    """Collects what decides the exit code while the events stream by."""

    def __init__(self, *, model: str | None = None) -> None:
        self.model = model
        """The configured model (None: no model is configured)."""
        self.errors: list[tuple[str, str]] = []
        """(where, message) of every ``error`` event, in order."""
        self.answered_by: str | None = None

    def note(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "error":
            self.errors.append((str(data.get("where") or ""), str(data.get("message") or "")))
        elif kind == "done":
            self.answered_by = data.get("model") or None

    def failure(self) -> str | None:
        """The message to exit 1 with, or None when the request succeeded. A fatal error wins; else,
        with a model, the last error: the one nearest the answer, the model's own failure to write it."""
        fatal = [message for where, message in self.errors if where in FATAL]
        if fatal:
            return fatal[0]
        if self.errors and self.answered_by is None:
            return self.errors[-1 if self.model else 0][1]
        return None
