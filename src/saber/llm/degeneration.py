"""Spotting a generation that has degenerated into a loop, so the stream can be cut early.

Small models fall into loops ("你好！你好！你好！…", the same sentence with a counter that goes
up). Two cheap checks on the tail of the text, both linear in the tail's length per period tried:

- the tail is periodic over at least four repetitions of a unit shorter than 40 characters, or
  three of a longer one, and over 60+ characters;
- five of the last six non-empty lines are the same line.

Both also run with digits folded to 0, so "Step 1 … Step 2 …" counts — then only for a unit with
words in it: the rows of a table of years and figures, or a list of IP addresses, differ only in
their digits too, and they are answers, not loops. Structured output (a JSON array or object, or
any text the caller says is structured, such as a plan) is not folded: a plan's nodes differ
only in their ids and numbers (n1 … n12, ``"page": 1`` … ``12``) and are a plan, not a loop; the
same node written again and again, digits and all, still is one.
"""

from __future__ import annotations

import re

_TAIL = 1600
_MAX_PERIOD = 300
_MIN_SPAN = 60
_DIGITS = re.compile(r"\d")
_MIN_LETTERS = 3


def repetition(text: str, *, structured: bool | None = None) -> str | None:
    """A short description of the loop the end of ``text`` is stuck in, or None.

    ``structured``: the text is data (a plan, tool arguments), so only an exact repetition is a
    loop; None decides by the text itself (it is JSON when it opens with a bracket or brace)."""
    raw = text[-_TAIL:]
    if structured is None:
        structured = looks_structured(text)
    tails = (raw,) if structured else (raw, _DIGITS.sub("0", raw))
    for tail in tails:
        unit = _periodic_unit(tail)
        if unit is not None and (tail is raw or _worded(unit)):
            return f"the model kept repeating {_show(unit)}"
        line = _repeated_line(tail, worded=tail is not raw)
        if line is not None:
            return f"the model kept repeating the line {_show(line)}"
    return None


_JSON_START = re.compile(r'^\s*(?:<think>.*?</think>\s*)?(?:```[\w-]*\s*)?'
                         r'(?:\[\s*(?:[\[{"\d\-\]]|true|false|null)|\{\s*["}])', re.S | re.I)
"""JSON's opening: an array of values or an object with a key (not Markdown's "[a link](…)")."""


def looks_structured(text: str) -> bool:
    """Whether ``text`` opens as JSON (maybe in a code fence, maybe after a reasoning block)."""
    return _JSON_START.match(text[:4000]) is not None


def _worded(unit: str) -> bool:
    """Whether a unit that repeats only once digits are folded has words around its numbers
    ("Step 0: check the weather"), not only numbers and punctuation: rows of a table of figures
    ("| 0000 | 000 |") and a list of addresses ("00.0.0.0, ") are data, however alike."""
    return sum(ch.isalpha() for ch in unit) >= _MIN_LETTERS


def _periodic_unit(tail: str) -> str | None:
    for period in range(1, min(_MAX_PERIOD, len(tail) // 3) + 1):
        reps = 4 if period < 40 else 3
        span = max(reps * period, _MIN_SPAN)
        if span > len(tail):
            break
        window = tail[-span:]
        if window[period:] == window[:-period]:
            return window[-period:]
    return None


def _repeated_line(tail: str, *, worded: bool) -> str | None:
    lines = [ln.strip() for ln in tail.splitlines() if ln.strip()]
    last = lines[-7:-1]  # the final line may still be growing
    if len(last) < 6:
        return None
    for candidate in set(last):
        if len(candidate) >= 4 and last.count(candidate) >= 5 and (not worded or _worded(candidate)):
            return candidate
    return None


def _show(unit: str) -> str:
    unit = " ".join(unit.split()) or repr(unit)
    return f'"{unit[:40]}…"' if len(unit) > 40 else f'"{unit}"'
