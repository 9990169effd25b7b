"""Errors a tool raises. Their messages are written for the model that called the tool."""

from __future__ import annotations


class ToolError(Exception):
    """A tool's own failure.

    ``retryable`` tells the runtime whether trying again can help: a timeout or a 5xx from a
    backend can; a 4xx, a bad argument or a missing key cannot.
    """

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable

    def __str__(self) -> str:
        return self.message


class ToolArgumentError(ToolError):
    """Arguments that do not fit a tool's schema. Never retryable: the same call fails again."""

    def __init__(self, message: str, *, tool: str | None = None, errors: list[str] | None = None) -> None:
        super().__init__(message, retryable=False)
        self.tool = tool
        self.errors = errors or [message]


class UnknownToolError(ToolError):
    """A name that is not in the registry (or not allowed for this request)."""

    def __init__(self, names: list[str] | str, known: list[str] | None = None) -> None:
        missing = [names] if isinstance(names, str) else list(names)
        message = f"unknown tool: {', '.join(missing)}"
        if known is not None:
            message += f" (known: {', '.join(sorted(known)) or 'none'})"
        super().__init__(message, retryable=False)
        self.names = missing
