"""Placeholders: a node's params naming another node's result.

Models write ``"$n1"``, ``"${n1}"`` or ``"{{n1}}"``; braced forms may add a path into a structured
result (``"${n1.city}"``, ``"{{n1.items.0}}"``). At parse time each reference to a node of the
plan becomes a dependency and is rewritten in one canonical form, ``${id}`` / ``${id.path}``.
At run time ``substitute_placeholders`` puts the upstream results in: a value that is exactly one
placeholder becomes the result itself (any type); a placeholder inside longer text becomes the
result's text.

A bare number is never a node here: "under $500", "$1 pizza", "${1}" are text. LLMCompiler's
``$1`` (a numbered plan's reference to step 1) is rewritten to ``${n1}`` by its own parser
(``llmcompiler.py``), the one shape where it means a step. A ``$name`` that names no node is
left alone too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

_PATTERN = re.compile(
    r"\$\{\s*(?P<b>[A-Za-z_][\w-]*)(?P<bp>(?:\.[\w-]+)*)\s*\}"
    r"|\{\{\s*(?P<m>[A-Za-z_][\w-]*)(?P<mp>(?:\.[\w-]+)*)\s*\}\}"
    r"|\$(?P<s>[A-Za-z_][\w-]*)\b"
)
"""The forms a model writes; node ids start with a letter (validation turns ``1`` into ``n1``)."""
_CANONICAL = re.compile(r"\$\{(?P<id>[A-Za-z_][\w-]*)(?P<path>(?:\.[\w-]+)*)\}")
"""The one form validation writes."""


class PlaceholderError(LookupError):
    """A placeholder whose node has no result (it failed, was skipped or does not exist)."""


def _walk_strings(value: Any, fn: Callable[[str], Any]) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, list):
        return [_walk_strings(v, fn) for v in value]
    if isinstance(value, dict):
        return {k: _walk_strings(v, fn) for k, v in value.items()}
    return value


def canonicalise(value: Any, resolve: Callable[[str], str | None]) -> tuple[Any, list[str]]:
    """``value`` with every placeholder naming a node (``resolve(ref)`` → node id) rewritten as
    ``${id}``, and the node ids referred to, in order of appearance."""
    found: list[str] = []

    def rewrite(text: str) -> str:
        def one(match: re.Match[str]) -> str:
            ref = match.group("b") or match.group("m") or match.group("s")
            path = match.group("bp") or match.group("mp") or ""
            node_id = resolve(ref)
            if node_id is None:
                return match.group(0)
            if node_id not in found:
                found.append(node_id)
            return "${" + node_id + path + "}"

        return _PATTERN.sub(one, text) if ("$" in text or "{{" in text) else text

    return _walk_strings(value, rewrite), found


def references(value: Any) -> list[str]:
    """Node ids named by canonical placeholders in ``value``."""
    found: list[str] = []

    def collect(text: str) -> str:
        for match in _CANONICAL.finditer(text):
            if match.group("id") not in found:
                found.append(match.group("id"))
        return text

    _walk_strings(value, collect)
    return found


def has_placeholder(value: Any) -> bool:
    return bool(references(value))


def substitute_placeholders(params: Mapping[str, Any], results: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with each placeholder replaced by the upstream node's result.

    ``results`` maps node id → result. ``"${n1}"`` alone becomes ``results["n1"]`` unchanged;
    ``"${n1.city}"`` looks ``city`` up in it (a JSON text result is decoded first); inside longer
    text the result is rendered as text (JSON for non-strings). Raises PlaceholderError naming
    the missing node or key.

    Validated params hold only the canonical form. ``$n1`` and ``{{n1}}`` (nodes built by hand)
    are filled too, but only for a node in ``results`` (a dependency), and a bare number
    (``$1``, ``${1}``) never is: a dollar amount in a user's query reaches the tool unchanged.
    """

    def lookup(node_id: str, path: str) -> Any:
        if node_id not in results:
            raise PlaceholderError(f"placeholder ${{{node_id}{path}}}: node {node_id} has no result")
        value = results[node_id]
        for key in [p for p in path.split(".") if p]:
            value = _step(value, key, node_id, path)
        return value

    def resolve(ref: str) -> str | None:
        return ref if ref in results else None

    def fill(text: str) -> Any:
        canon, _ = canonicalise(text, resolve)
        if not isinstance(canon, str) or "${" not in canon:
            return canon
        whole = _CANONICAL.fullmatch(canon.strip())
        if whole:
            return lookup(whole.group("id"), whole.group("path"))
        return _CANONICAL.sub(lambda m: _as_text(lookup(m.group("id"), m.group("path"))), canon)

    out = _walk_strings(dict(params), fill)
    assert isinstance(out, dict)
    return out


def _step(value: Any, key: str, node_id: str, path: str) -> Any:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise PlaceholderError(f"placeholder ${{{node_id}{path}}}: the result of {node_id} is text, not an object") from None
    if isinstance(value, Mapping) and key in value:
        return value[key]
    if isinstance(value, list) and key.isdigit() and int(key) < len(value):
        return value[int(key)]
    raise PlaceholderError(f"placeholder ${{{node_id}{path}}}: no {key!r} in the result of {node_id}")


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
