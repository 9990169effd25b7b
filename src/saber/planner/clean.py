"""Cleaning a planner's raw text: reasoning blocks, chat-template tokens, code fences.

Also the balanced scan that finds JSON values in prose and tells a truncated value (the text
ends inside it) from a broken one (mismatched brackets).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_THINK = re.compile(r"<(think|thinking|reasoning|thought)>.*?</\1>", re.S | re.I)
_THINK_CLOSE = re.compile(r"^.*?</(?:think|thinking|reasoning|thought)>", re.S | re.I)
_THINK_OPEN = re.compile(r"<(?:think|thinking|reasoning|thought)>", re.I)
_THINK_END = re.compile(r"</(?:think|thinking|reasoning|thought)>", re.I)
# End-of-turn and role tokens that leak from chat templates (the text tool-call markers are kept).
_TEMPLATE_TOKENS = re.compile(
    r"<\|(?:im_start|im_end|eot_id|end_of_text|endoftext|end|assistant|start_header_id|end_header_id"
    r"|eot|eom|header_start|header_end)\|>"
    r"|<｜end▁of▁sentence｜>|</s>|<s>"
)
_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n`]*\n?(.*?)(?:```|\Z)", re.S)


def strip_reasoning(text: str) -> tuple[str, bool]:
    """Text without ``<think>…</think>`` blocks (also a lone closing tag); True when any was removed."""
    if "<" not in text:
        return text, False
    cleaned = _THINK.sub("", text)
    cleaned = _THINK_CLOSE.sub("", cleaned)  # "...reasoning</think>[...]" (opening tag eaten by the server)
    cleaned = _THINK_OPEN.sub("", cleaned)  # an unclosed block: keep its text, the plan may be inside
    return cleaned, cleaned != text


def in_reasoning(text: str) -> bool:
    """Whether ``text`` ends inside a reasoning block (its ``<think>`` has no closing tag yet)."""
    if "<" not in text:
        return False
    opened = [m.end() for m in _THINK_OPEN.finditer(text)]
    return bool(opened) and _THINK_END.search(text, opened[-1]) is None


def strip_template_tokens(text: str) -> str:
    if "<" not in text:
        return text
    return _TEMPLATE_TOKENS.sub("", text)


def fenced_blocks(text: str) -> list[str]:
    """Bodies of Markdown code fences (an unclosed last fence runs to the end), JSON ones first."""
    blocks = [(lang.lower(), body) for lang, body in _FENCE.findall(text)]
    preferred = [b for lang, b in blocks if lang in ("json", "json5", "jsonc")]
    return preferred + [b for lang, b in blocks if lang not in ("json", "json5", "jsonc")]


@dataclass(frozen=True, kw_only=True, slots=True)
class Span:
    """A bracketed value found in text."""

    start: int
    end: int
    """Index just past the value (the end of the text when it is unclosed)."""
    closed: bool
    mismatched: bool
    """A closing bracket that did not match: broken JSON, not merely cut off."""
    element_start: int | None = None
    """When unclosed: where the outermost array's unfinished element begins (to drop it)."""


_OPEN = {"[": "]", "{": "}"}


def scan(text: str, start: int) -> Span:
    """Follow brackets from ``text[start]`` (``[`` or ``{``) to its match, minding strings."""
    stack: list[str] = []
    in_string: str | None = None
    escape = False
    mismatched = False
    outer_array_depth: int | None = None
    element_start: int | None = None
    i = start
    n = len(text)
    while i < n:
        ch = text[i]
        if in_string:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == in_string:
                in_string = None
        elif ch in ('"', "'") and _opens_string(text, i, ch):
            in_string = ch
        elif ch in _OPEN:
            stack.append(_OPEN[ch])
            if ch == "[" and outer_array_depth is None:
                outer_array_depth = len(stack)
                element_start = i + 1
        elif ch in ("]", "}"):
            if stack and stack[-1] == ch:
                stack.pop()
            elif ch in stack:
                mismatched = True
                while stack and stack.pop() != ch:
                    pass
            else:
                mismatched = True
            if not stack:
                return Span(start=start, end=i + 1, closed=True, mismatched=mismatched)
        elif ch == "," and outer_array_depth is not None and len(stack) == outer_array_depth:
            element_start = i + 1
        i += 1
    unfinished = outer_array_depth is not None and len(stack) > outer_array_depth
    return Span(start=start, end=n, closed=False, mismatched=mismatched,
                element_start=element_start if unfinished else None)


def _opens_string(text: str, i: int, quote: str) -> bool:
    """A single quote starts a string only where JSON-ish syntax expects one (not in "don't")."""
    if quote == '"':
        return True
    j = i - 1
    while j >= 0 and text[j].isspace():  # not text[:i].rstrip(): that copies the text for every quote
        j -= 1
    return j < 0 or text[j] in "[{,:"


def json_starts(text: str, limit: int = 64) -> Iterator[int]:
    """Positions of ``[`` and ``{`` that may start a JSON value, in order."""
    for count, match in enumerate(re.finditer(r"[\[{]", text), start=1):
        yield match.start()
        if count >= limit:
            return
