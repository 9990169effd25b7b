"""Is a model's answer usable? Empty, cut off, or the prompt echoed back is a failed generation.

A small model asked to write from "The user's question: … Steps run and their results: …" often
writes exactly that back. Three signs of an echo, any one is enough:

- the answer starts with one of the prompt's own labels (a line of the prompt that opens with a
  few words and a colon, "The user's question:"), or has two of them at the start of lines;
- half of the answer (in 20-character pieces) is text of the system prompt;
- nearly all of a long answer is text of the prompt.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from saber.llm.types import Message, StreamEnd

_LABEL = re.compile(r"^\s*([A-Za-z][A-Za-z' ]{2,40}?|[\u3400-\u9fff]{2,12})\s*[:：]", re.MULTILINE)
_SHINGLE = 20


def generation_failure(text: str, messages: Sequence[Message], end: StreamEnd | None) -> str | None:
    """Why ``text`` (a streamed answer to ``messages``) is not a usable answer, or None if it is."""
    if not text.strip():
        return "the model returned an empty answer"
    if end is not None and end.cut:
        return end.cut
    if end is not None and end.finish_reason == "length":
        return "the model reached its token limit"
    echo = echoed_prompt(text, messages)
    if echo is not None:
        return echo
    return None


def echoed_prompt(text: str, messages: Sequence[Message]) -> str | None:
    system = "\n".join(m.content for m in messages if m.role == "system")
    prompt = "\n".join(m.content for m in messages if m.role != "assistant")
    labels = set(_labels(prompt))
    found = [lb for lb in _labels(text) if lb in labels]
    first = _LABEL.match(text)
    if found and ((first is not None and _norm(first.group(1)) in labels) or len(set(found)) >= 2):
        return f'the model echoed its prompt (it wrote "{found[0]}:")'
    pieces = _shingles(text)
    if len(text.strip()) >= 40 and pieces and _share(pieces, _flat(system)) >= 0.5:
        return "the model echoed its instructions"
    if len(text.strip()) >= 160 and pieces and _share(pieces, _flat(prompt)) >= 0.85:
        return "the model copied its prompt instead of answering"
    return None


def _labels(text: str) -> list[str]:
    """Labels at the start of lines, in order."""
    out: list[str] = []
    for match in _LABEL.finditer(text):
        label = _norm(match.group(1))
        if len(label.split()) >= 2 or (label and "\u3400" <= label[0] <= "\u9fff"):
            out.append(label)
    return out


def _norm(label: str) -> str:
    return " ".join(label.lower().split())


def _flat(text: str) -> str:
    return " ".join(text.split())


def _shingles(text: str) -> set[str]:
    flat = _flat(text)
    return {flat[i : i + _SHINGLE] for i in range(max(0, len(flat) - _SHINGLE + 1))}


def _share(pieces: set[str], source: str) -> float:
    """The part of ``pieces`` (an answer's shingles) that are shingles of ``source`` (flattened
    text): a piece of ``_SHINGLE`` characters is one exactly when it occurs in it, so the
    source's own shingles (a set as large as the prompt, on every answer) are never made."""
    return sum(1 for piece in pieces if piece in source) / len(pieces)
