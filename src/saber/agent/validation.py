"""What ``Agent.stream`` / ``Agent.resume`` accept: checked before any event, with a clear ValueError.

A query must be text (``bytes`` are refused, not decoded by guess), non-empty, encodable (no lone
surrogates and no NUL, which would fail later when stored or sent) and within ``max_query_chars``. A user id
is a string of at most 200 characters without surrounding spaces (otherwise "alice" and
"alice " would be two users sharing a name). A task id is at most 200 characters of text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

MAX_ID_CHARS = 200


def check_query(query: Any, *, max_chars: int) -> str:
    """The query, stripped; or a ValueError naming what is wrong with it."""
    if isinstance(query, bytes | bytearray):
        raise ValueError("query must be text (str), got bytes: decode it first")
    if not isinstance(query, str):
        raise ValueError(f"query must be text (str), got {type(query).__name__}")
    if len(query) > max_chars:
        raise ValueError(f"query is {len(query):,} characters, over the limit of {max_chars:,} "
                         "(setting agent.max_query_chars / SABER_AGENT_MAX_QUERY_CHARS)")
    _check_encodable("query", query)
    if not query.strip():
        raise ValueError("query must not be empty")
    return query.strip()


def check_user_id(user_id: Any) -> str:
    if not isinstance(user_id, str):
        raise ValueError(f"user_id must be a string, got {type(user_id).__name__}")
    if not user_id.strip():
        raise ValueError("user_id must not be empty")
    if user_id != user_id.strip():
        raise ValueError(f"user_id must not start or end with spaces: {user_id[:MAX_ID_CHARS]!r}")
    _check_id("user_id", user_id)
    return user_id


def check_task_id(task_id: Any) -> str:
    if not isinstance(task_id, str):
        raise ValueError(f"task_id must be a string, got {type(task_id).__name__}")
    if not task_id.strip():
        raise ValueError("task_id must not be empty")
    _check_id("task_id", task_id)
    return task_id


def check_selected_tools(selected: Any) -> list[str] | None:
    """None (all tools) or a list of names; ``[]`` means no tool at all."""
    if selected is None:
        return None
    if isinstance(selected, str | bytes) or not isinstance(selected, Sequence | set | frozenset):
        raise ValueError(f"selected_tools must be a list of tool names or None, got {type(selected).__name__}")
    names = list(selected)
    bad = [n for n in names if not isinstance(n, str)]
    if bad:
        raise ValueError(f"selected_tools must hold tool names (strings), got {bad[0]!r}")
    return names


def _check_id(name: str, value: str) -> None:
    if len(value) > MAX_ID_CHARS:
        raise ValueError(f"{name} is {len(value):,} characters, over the limit of {MAX_ID_CHARS}")
    _check_encodable(name, value)


def _check_encodable(name: str, value: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"{name} is not valid Unicode text: a lone surrogate at position {exc.start} "
                         f"({value[exc.start]!r})") from None
    if (nul := value.find("\x00")) >= 0:  # PostgreSQL cannot store it: refused before it is written anywhere
        raise ValueError(f"{name} holds a NUL character (\\x00) at position {nul}: remove it")


def limit_answer(answer: str, max_chars: int) -> str:
    """The answer cut to ``max_chars``, with a note naming the limit when it was longer."""
    if len(answer) <= max_chars:
        return answer
    return (answer[:max_chars] + f"\n[truncated: the answer had {len(answer):,} characters, over the limit of "
            f"{max_chars:,} (setting agent.max_answer_chars)]")
