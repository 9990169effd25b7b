"""What a node's result may be: JSON-encodable and bounded in size.

A tool may return anything: a dict with tuple keys, a circular structure, a 10 MB string. Every
later step (events, checkpoints, the observation text for the generator) encodes the result as
JSON, so it is made JSON-safe once, when the node finishes, and cut to ``max_chars`` with a note
that says so. Nothing downstream can then fail on it.
"""

from __future__ import annotations

import json
from typing import Any

TRUNCATED_NOTE = "[truncated: the result had {size} characters, over the limit of {limit} (max_tool_result_chars)]"

_WALK_BUDGET = 5_000
"""Items a structured result may have and still be made safe on the event loop (bigger: a thread)."""


def is_small(value: Any, budget: int = _WALK_BUDGET) -> bool:
    """True when ``value`` has at most ``budget`` items and strings totalling little: cheap to encode inline."""
    stack = [value]
    chars = 0
    while stack:
        budget -= 1
        if budget < 0:
            return False
        item = stack.pop()
        if isinstance(item, str | bytes):
            chars += len(item)
            if chars > 64 * budget + 65_536:
                return False
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)
    return True


def safe_result(value: Any, max_chars: int) -> Any:
    """``value`` as something JSON can encode, at most ``max_chars`` characters once encoded.

    A string over the limit is cut, with a note naming the limit; a structure that JSON cannot
    encode (tuple keys, cycles, odd objects) becomes its JSON-safe equivalent (keys as text,
    a cycle as ``"<circular>"``, other objects as their ``str``); one whose encoding is over the
    limit becomes its encoding cut to the limit, with the note.
    """
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return _cut(value, max_chars)
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        value = jsonable(value)
        text = json.dumps(value, ensure_ascii=False)
    if len(text) > max_chars:
        return _cut(text, max_chars)
    return value


def jsonable(value: Any, _seen: frozenset[int] = frozenset(), _depth: int = 0) -> Any:
    """A JSON-safe copy of ``value``: dict keys as text, cycles and very deep nesting cut off."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if _depth > 200:
        return "<nested too deeply>"
    if id(value) in _seen:
        return "<circular>"
    seen = _seen | {id(value)}
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): jsonable(v, seen, _depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v, seen, _depth + 1) for v in value]
    try:
        return str(value)
    except Exception as exc:  # a __str__ that raises: say so rather than fail the node
        return f"<unprintable {type(value).__name__}: {exc!r}>"


def _cut(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    return text[:max_chars] + "\n" + TRUNCATED_NOTE.format(size=len(text), limit=max_chars)
