"""What a node's result may be: JSON-encodable and bounded in size.

A tool may return anything: a dict with tuple keys, a circular structure, a 10 MB string. Every
later step (events, checkpoints, the observation text for the generator) encodes the result as
JSON, so it is made JSON-safe once, when the node finishes, and cut to ``max_chars`` with a note
that says so. Nothing downstream can then fail on it.
"""

from __future__ import annotations

import json
from typing import Any

TRUNCATED_NOTE = "[truncated: the result had {size} characters, over the limit of {limit:,} (graph.max_result_chars)]"

_WALK_BUDGET = 5_000
"""Items a structured result may have and still be made safe on the event loop (bigger: a thread)."""


def is_small(value: Any, budget: int = _WALK_BUDGET) -> bool:
    """True when ``value`` holds at most ``budget`` items and 64 KB of text: cheap to encode inline.

    Containers are sized with ``len`` before they are opened, so a huge one is recognised at once;
    a cycle uses up the budget and counts as big."""
    stack = [value]
    chars = 0
    while stack:
        item = stack.pop()
        if isinstance(item, str | bytes):
            chars += len(item)
            if chars > 65_536:
                return False
        elif isinstance(item, dict | list | tuple | set | frozenset):
            budget -= len(item) + 1
            if budget < 0:
                return False
            if isinstance(item, dict):
                stack.extend(item.keys())
                stack.extend(item.values())
            else:
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
        text, complete = _encode_upto(value, max_chars)
    except (TypeError, ValueError, RecursionError):
        value = jsonable(value)
        text, complete = _encode_upto(value, max_chars)
    if not complete:
        return text[:max_chars] + "\n" + TRUNCATED_NOTE.format(size=f"more than {max_chars:,}", limit=max_chars)
    return value


def _encode_upto(value: Any, max_chars: int) -> tuple[str, bool]:
    """``value`` as JSON, stopping once past ``max_chars`` (then False). Encoded piece by piece
    (``iterencode``), so a thread doing this hands the GIL back to the event loop as it goes,
    and a 10 MB structure costs only as much as the part that is kept."""
    if is_small(value):
        return json.dumps(value, ensure_ascii=False, default=str), True
    parts: list[str] = []
    size = 0
    for chunk in json.JSONEncoder(ensure_ascii=False, default=str).iterencode(value):
        parts.append(chunk)
        size += len(chunk)
        if size > max_chars:
            return "".join(parts), False
    return "".join(parts), True


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
    return text[:max_chars] + "\n" + TRUNCATED_NOTE.format(size=f"{len(text):,}", limit=max_chars)
