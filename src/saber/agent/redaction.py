"""The memory gate and rule scans kept off the event loop for long text (redaction itself is
``saber.redact.redacted``).

The gates are linear but not free (about 2 µs a character): text longer than ``INLINE_CHARS`` is
scanned in a worker thread, in windows, so the loop keeps serving other requests meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from saber.agent.memory.gates import Rejection, check_memory_text
from saber.redact import INLINE_CHARS

T = TypeVar("T")


async def checked_memory_text(text: str) -> Rejection | None:
    """``check_memory_text(text)``, in a thread when the text is long."""
    if len(text) <= INLINE_CHARS:
        return check_memory_text(text)
    return await asyncio.to_thread(check_memory_text, text)


async def off_loop_if_long(text: str, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``, in a worker thread when ``text`` (what ``fn`` scans) is long: rule-based
    scans (routing, city finding) of a 100 KB query must not stall the event loop."""
    if len(text) <= INLINE_CHARS:
        return fn(*args)
    return await asyncio.to_thread(fn, *args)
