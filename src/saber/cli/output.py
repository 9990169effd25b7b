"""Where the CLI prints, and how: text from users, documents, tools and models is never markup.

Everything printed through rich goes through ``plain`` (a ``rich.text.Text``, which rich never
parses for ``[tags]``) or ``print(..., markup=False)``. Styles come only from our own code.
"""

from __future__ import annotations

import sys
from functools import cache
from typing import TYPE_CHECKING, Any

from saber import jsonsafe

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class CLIError(Exception):
    """An error to print as one ``saber: error: …`` line on stderr before exiting with ``code``."""

    def __init__(self, message: str, code: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.code = code


class Interrupted(Exception):
    """Ctrl-C: printed as ``saber: interrupted`` — with how to continue a react task, or what was
    left undone (``detail``) — exit 130."""

    def __init__(self, task_id: str | None = None, *, detail: str = "") -> None:
        super().__init__(task_id or detail)
        self.task_id = task_id
        self.detail = detail

    def line(self) -> str:
        if self.task_id:
            return f"saber: interrupted — continue with `saber resume {self.task_id}`"
        return f"saber: interrupted: {self.detail}" if self.detail else "saber: interrupted"


class UsageError(CLIError):
    """Bad arguments, settings or input: one ``saber: error: …`` line, exit code 2."""

    def __init__(self, message: str) -> None:
        super().__init__(message, EXIT_USAGE)


@cache
def out() -> Console:
    """stdout: answers, listings, documents. Never wraps lines (a copied id or path stays whole)."""
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True, emoji=False)


@cache
def err() -> Console:
    """stderr: progress, notes and errors."""
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)


def plain(text: object, style: str = "") -> Text:
    """``text`` exactly as it is (no markup, no emoji codes), optionally in one style."""
    from rich.text import Text

    return Text(str(text), style=style)


def line(*parts: object) -> Text:
    """A line from pieces: a ``str`` is shown as is, a ``(text, style)`` pair is styled."""
    from rich.text import Text

    result = Text()
    for part in parts:
        if isinstance(part, tuple):
            result.append(str(part[0]), style=str(part[1]))
        else:
            result.append(str(part))
    return result


def print_error(message: str) -> None:
    """The one error line; plain ``sys.stderr`` so nothing in ``message`` is interpreted."""
    text = " ".join(str(message).split()) or "unknown error"
    sys.stderr.write(f"saber: error: {text}\n")
    sys.stderr.flush()


def write_raw(text: str) -> None:
    """``text`` to stdout byte for byte (plus a final newline if it has none): for pipes and files."""
    sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
    sys.stdout.flush()


def print_json(data: Any) -> None:

    write_raw(jsonsafe.dumps(data, indent=2))
