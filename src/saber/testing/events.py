"""Helpers for asserting on event streams."""

from __future__ import annotations

from collections.abc import Iterable

from saber.events import Event


def event_kinds(events: Iterable[Event], *, collapse_tokens: bool = True) -> list[str]:
    """Event types in order; with ``collapse_tokens`` a run of ``token`` events counts once."""
    out: list[str] = []
    for e in events:
        if collapse_tokens and e.type == "token" and out and out[-1] == "token":
            continue
        out.append(e.type)
    return out
