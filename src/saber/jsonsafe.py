"""One JSON encoding for everything Saber writes out: SSE events, the CLI's ``--json``, the stores.

Tool results are arbitrary Python values, so the encoder turns what JSON lacks into plain data
instead of failing or writing ``str()`` of a repr: datetimes and dates as ISO 8601, bytes as
UTF-8 text (or base64 when they are not text), dataclasses and pydantic models as their fields,
sets and tuples as lists, enums as their values, paths as strings, exceptions as
``{"error": type, "message": ...}``. An object with none of these shapes becomes
``{"type": "<qualified class name>"}`` (its repr may hold secrets or be megabytes long).
Cycles are cut (``"<cycle>"``) and non-finite floats become null, so the output is strict JSON.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import decimal
import enum
import json
import math
import uuid
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

__all__ = ["dumps", "to_jsonable"]

_MAX_DEPTH = 64


def to_jsonable(value: Any) -> Any:
    """``value`` as plain JSON data (dict, list, str, int, float, bool, None)."""
    return _convert(value, set(), 0)


def dumps(value: Any, *, indent: int | None = None) -> str:
    """Strict JSON text of ``value`` (non-ASCII kept as is)."""
    return json.dumps(_convert(value, set(), 0), ensure_ascii=False, indent=indent, allow_nan=False)


def _convert(value: Any, seen: set[int], depth: int) -> Any:
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int) and not isinstance(value, enum.Enum):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if depth >= _MAX_DEPTH:
        return "<too deep>"
    if isinstance(value, enum.Enum):
        return _convert(value.value, seen, depth + 1)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return {"base64": base64.b64encode(raw).decode("ascii")}
    if isinstance(value, decimal.Decimal):
        return _convert(float(value), seen, depth)
    if isinstance(value, uuid.UUID | PurePath):
        return str(value)
    if isinstance(value, BaseException):
        return {"error": type(value).__name__, "message": str(value)}
    if id(value) in seen:
        return "<cycle>"
    seen.add(id(value))
    try:
        return _container(value, seen, depth)
    finally:
        seen.discard(id(value))


def _container(value: Any, seen: set[int], depth: int) -> Any:
    if isinstance(value, Mapping):
        return {_key(k): _convert(v, seen, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=repr) if isinstance(value, set | frozenset) else value
        return [_convert(v, seen, depth + 1) for v in items]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        data = getattr(value, "to_dict", None)
        if callable(data):  # saber events: {"type", "data"}
            return _convert(data(), seen, depth + 1)
        return {f.name: _convert(getattr(value, f.name), seen, depth + 1) for f in dataclasses.fields(value)}
    dump = getattr(value, "model_dump", None)  # pydantic models
    if callable(dump) and not isinstance(value, type):
        try:
            return _convert(dump(mode="json"), seen, depth + 1)
        except Exception:  # a model whose fields cannot be dumped: still say what it was
            return {"type": _qualname(value)}
    if hasattr(value, "tolist") and callable(value.tolist):  # numpy arrays and scalars
        return _convert(value.tolist(), seen, depth + 1)
    return {"type": _qualname(value)}


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    converted = _convert(key, set(), _MAX_DEPTH - 1)
    return converted if isinstance(converted, str) else json.dumps(converted, ensure_ascii=False)


def _qualname(value: Any) -> str:
    cls = type(value)
    return f"{cls.__module__}.{cls.__qualname__}"
