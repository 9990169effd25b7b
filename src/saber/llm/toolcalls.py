"""Native tool calls, whatever shape an endpoint sends them in, normalised to ``ToolCall``.

Endpoints differ in small ways that break naive code:

- arguments arrive as a JSON string (the spec), as an object (some Ollama/GLM builds), empty, or as
  broken JSON (a small model's single quotes or trailing commas, repaired) — ``parse_arguments``
  copes with all of them and never raises: unusable text, and text cut off mid-call (an open
  string or object: repairing it would give plausible, wrong values), is kept as
  ``{"_raw": text}`` so the tool's validation names the problem;
- ids are sometimes missing — stable ones (``call_0``, ``call_1``...) are generated;
- when streaming, some endpoints send several parallel calls all at ``index`` 0 —
  ``ToolCallAccumulator`` starts a new call when a new id or a new name shows up at the same index.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import json_repair

from saber.llm.types import ToolCall, ToolCallDelta

RAW_KEY = "_raw"
"""Key under which unparseable argument text is kept."""


def parse_arguments(raw: object) -> dict[str, Any]:
    """Arguments of a tool call as a dict; never raises."""
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, bytes | bytearray):
        raw = raw.decode("utf-8", errors="replace")
    if not isinstance(raw, str):
        return {RAW_KEY: raw}
    text = raw.strip()
    if not text:
        return {}
    value = _loads(text)
    if isinstance(value, str) and value.strip().startswith("{"):
        value = _loads(value.strip())  # double-encoded: "{\"city\": \"Paris\"}"
    if isinstance(value, dict):
        return value
    return {RAW_KEY: raw}


def _loads(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        pass
    if _truncated(text):  # cut off mid-call (max_tokens): a "repaired" value would be plausible and wrong
        return None
    try:
        repaired: object = json_repair.loads(text)
    except Exception:  # json_repair is best effort; a failure here just means "unusable"
        return None
    # json_repair turns arbitrary prose into "" or {}; only trust it when the text looked like JSON.
    if repaired == {} and not text.startswith("{"):
        return None
    return repaired


def _truncated(text: str) -> bool:
    """True when JSON text ends inside a string or with an object or array still open."""
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
    return in_string or depth > 0


def _field(obj: object, key: str) -> Any:
    """``obj.key`` or ``obj[key]``: the openai client gives objects, raw JSON gives dicts."""
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def _unique_id(taken: set[str], position: int) -> str:
    candidate = f"call_{position}"
    n = position
    while candidate in taken:
        n += 1
        candidate = f"call_{n}"
    return candidate


def tool_calls_from_openai(raw_calls: Sequence[object] | None) -> tuple[ToolCall, ...]:
    """The non-streamed ``message.tool_calls`` list (objects or dicts) as ``ToolCall``s.

    Entries without a function name are dropped only when they carry nothing at all.
    """
    if not raw_calls:
        return ()
    calls: list[tuple[str | None, str, dict[str, Any]]] = []
    for raw in raw_calls:
        function = _field(raw, "function") or {}
        name = _field(function, "name") or _field(raw, "name") or ""
        arguments = _field(function, "arguments")
        if arguments is None:
            arguments = _field(raw, "arguments")
        if not name and not arguments:
            continue
        call_id = _field(raw, "id")
        calls.append((str(call_id) if call_id else None, str(name), parse_arguments(arguments)))
    return _with_ids(calls)


def _with_ids(calls: Sequence[tuple[str | None, str, dict[str, Any]]]) -> tuple[ToolCall, ...]:
    taken = {call_id for call_id, _, _ in calls if call_id}
    out: list[ToolCall] = []
    for position, (call_id, name, arguments) in enumerate(calls):
        if not call_id:
            call_id = _unique_id(taken, position)
            taken.add(call_id)
        out.append(ToolCall(id=call_id, name=name, arguments=arguments))
    return tuple(out)


@dataclass(kw_only=True)
class _Pending:
    id: str | None = None
    name: str | None = None
    parts: list[str] = field(default_factory=list)
    objects: list[Mapping[str, Any]] = field(default_factory=list)

    def text(self) -> str:
        return "".join(self.parts)

    def looks_complete(self) -> bool:
        """The arguments so far already form a whole JSON object (so more text starts a new call)."""
        if self.objects:
            return True
        text = self.text().strip()
        if not text:
            return False
        try:
            return isinstance(json.loads(text), dict)
        except ValueError:
            return False

    def arguments(self) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for obj in self.objects:
            merged.update(obj)
        if self.parts:
            merged.update(parse_arguments(self.text()))
        return merged


class ToolCallAccumulator:
    """Assembles streamed tool-call fragments into whole ``ToolCall``s.

    ``add`` takes one fragment as the endpoint sent it and returns a ``ToolCallDelta`` whose
    ``index`` is the call's position in the final list, so consumers can group fragments even when
    the endpoint put every call at index 0.
    """

    def __init__(self) -> None:
        self._calls: list[_Pending] = []
        self._current: dict[int, int] = {}
        """Endpoint index -> position in ``_calls`` of the call currently growing there."""

    def add(
        self,
        index: int | None,
        *,
        call_id: str | None = None,
        name: str | None = None,
        arguments: object = None,
    ) -> ToolCallDelta:
        position = self._position(index, call_id, name)
        pending = self._calls[position]
        if call_id and not pending.id:
            pending.id = call_id
        if name and not pending.name:
            pending.name = name
        text = ""
        if isinstance(arguments, Mapping):
            pending.objects.append(arguments)
            text = json.dumps(dict(arguments), ensure_ascii=False)
        elif isinstance(arguments, str) and arguments:
            pending.parts.append(arguments)
            text = arguments
        return ToolCallDelta(index=position, id=call_id or None, name=name or None, arguments=text)

    def _position(self, index: int | None, call_id: str | None, name: str | None) -> int:
        if index is None:
            # No index at all: a fragment with an id or a name opens a call, others continue the last.
            if (call_id or name or not self._calls) and not self._continues_last(call_id):
                return self._open(None)
            return len(self._calls) - 1
        position = self._current.get(index)
        if position is None or self._starts_new(self._calls[position], call_id, name):
            return self._open(index)
        return position

    def _continues_last(self, call_id: str | None) -> bool:
        return bool(call_id and self._calls and self._calls[-1].id == call_id)

    @staticmethod
    def _starts_new(pending: _Pending, call_id: str | None, name: str | None) -> bool:
        if call_id and pending.id:
            return call_id != pending.id
        if name and pending.name and name != pending.name:
            return True
        # Same (or no) id and the same name again: a repeat header, unless the arguments are done.
        return bool((call_id or name) and pending.name and pending.looks_complete())

    def _open(self, index: int | None) -> int:
        self._calls.append(_Pending())
        position = len(self._calls) - 1
        if index is not None:
            self._current[index] = position
        return position

    def __len__(self) -> int:
        return len(self._calls)

    def finish(self) -> tuple[ToolCall, ...]:
        """The assembled calls, in the order they started; ids generated where none came."""
        calls = [
            (p.id, p.name or "", p.arguments())
            for p in self._calls
            if p.name or p.parts or p.objects
        ]
        return _with_ids(calls)
