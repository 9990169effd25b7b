"""Default substitution of upstream results into a node's params.

Accepted forms: ``$n1``, ``${n1}``, ``{{n1}}`` and ``$1`` (shorthand for ``n1`` when there is
no node called ``1``), optionally with a dotted path into a dict result: ``{{n1.city}}``.
A string that is exactly one placeholder is replaced by the result itself (any type); a
placeholder inside a longer string is replaced by the result as text (JSON for non-strings).
Placeholders naming no known result are left as they are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

Substitute = Callable[[Any, Mapping[str, Any]], Any]
"""``(params, results by node id) -> params with placeholders replaced``."""

_PATTERN = re.compile(
    r"\{\{\s*(?P<a>[A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)*)\s*\}\}"
    r"|\$\{\s*(?P<b>[A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)*)\s*\}"
    r"|\$(?P<c>[A-Za-z0-9_]+)"
)
_MISSING = object()


def substitute_placeholders(params: Any, results: Mapping[str, Any]) -> Any:
    """``params`` with every placeholder that names a result replaced (recursively)."""
    if isinstance(params, str):
        return _substitute_str(params, results)
    if isinstance(params, Mapping):
        return {k: substitute_placeholders(v, results) for k, v in params.items()}
    if isinstance(params, list | tuple):
        return [substitute_placeholders(v, results) for v in params]
    return params


def _lookup(ref: str, results: Mapping[str, Any]) -> Any:
    head, *path = ref.split(".")
    if head in results:
        value = results[head]
    elif head.isdigit() and f"n{head}" in results:
        value = results[f"n{head}"]
    else:
        return _MISSING
    for part in path:
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def _substitute_str(text: str, results: Mapping[str, Any]) -> Any:
    whole = _PATTERN.fullmatch(text.strip())
    if whole:
        value = _lookup(whole.group("a") or whole.group("b") or whole.group("c"), results)
        return text if value is _MISSING else value

    def replace(match: re.Match[str]) -> str:
        value = _lookup(match.group("a") or match.group("b") or match.group("c"), results)
        if value is _MISSING:
            return match.group(0)
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)

    return _PATTERN.sub(replace, text)
