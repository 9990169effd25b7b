"""Finding the plan's JSON in cleaned text: fences first, then every bracket in order.

Strict ``json.loads`` is tried before json-repair. A value the text ends inside (a truncated
plan) loses its unfinished last element before repair, so every complete node is kept and no
half-written one is invented.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from saber.llm.text_tool_calls import loads_lenient
from saber.planner.clean import Span, fenced_blocks, json_starts, scan
from saber.planner.shapes import Shape, recognise


@dataclass(frozen=True, kw_only=True)
class Found:
    shape: Shape
    repaired: bool
    truncated: bool
    """The text ends inside the value: the end of the plan is missing."""
    closed: bool = True
    """Every node found was closed in the text (its object's closing brace is there), so more
    text cannot change it: the value is complete, or it is an array whose unfinished last element
    was left out. False for a cut object holding the nodes (a truncated string may be in them)."""
    unfinished: bool = False
    """A node the text began but did not finish was left out."""


def find_plans(text: str) -> Iterator[Found]:
    """Every plan shape in ``text``, in order: code fences first, then the whole text.

    Lazy, so a caller that takes the first usable one pays for no more. An empty plan (``[]``)
    is yielded too, unless it is cut off (then it is no answer at all).
    """
    for source in [*fenced_blocks(text), text]:
        for found in _candidates(source):
            if found.shape.nodes or not found.truncated:
                yield found


def _candidates(text: str) -> Iterator[Found]:
    stripped = text.strip()
    if stripped[:1] in ("[", "{"):
        try:
            value = json.loads(stripped)
        except ValueError:
            pass
        else:
            shape = recognise(value)
            if shape is not None:
                yield Found(shape=shape, repaired=False, truncated=False)
                return
    consumed = -1
    for start in json_starts(text):
        if start < consumed:
            continue  # inside a value already tried
        span = scan(text, start)
        found = _decode(text, span)
        if found is not None:
            yield found
            consumed = span.end
        if not span.closed:
            return  # the rest of the text is inside this unfinished value


def _decode(text: str, span: Span) -> Found | None:
    chunk = text[span.start:span.end]
    truncated = not span.closed and not span.mismatched
    if truncated and span.element_start is None and text[span.start] == "{" and "[" not in chunk:
        return None  # one object cut off mid-way: nothing complete to keep
    unfinished = truncated and span.element_start is not None
    if unfinished:
        chunk = text[span.start:span.element_start].rstrip().rstrip(",")
    value, repaired = loads_lenient(chunk)
    shape = recognise(value)
    if shape is None:
        return None
    closed = span.closed or text[span.start] == "["  # a top-level array is cut between its elements
    return Found(shape=shape, repaired=repaired or truncated, truncated=truncated, closed=closed, unfinished=unfinished)
