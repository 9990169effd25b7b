"""Validate and coerce tool arguments against a JSON Schema.

Models send ``"3"`` where the schema says integer and ``"true"`` where it says boolean. This
module accepts such values when the conversion is lossless and rejects everything else with a
message that names the field ("city: field required", "days: expected integer, got 'abc'").
It covers the subset of JSON Schema that tool definitions use: types (also as lists), nested
objects and arrays, enum/const, defaults, anyOf/oneOf/allOf, $ref into $defs, and the usual
numeric and string bounds.
"""

from __future__ import annotations

import copy
import difflib
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

_TRUE = {"true"}
_FALSE = {"false"}
"""Only the JSON spellings: "yes", "1" or "on" could mean anything (a name, a count, a switch label)."""
_INT_RE = re.compile(r"^[+-]?[0-9]{1,40}$", re.ASCII)
_NUMBER_RE = re.compile(r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]{1,4})?$", re.ASCII)
"""ASCII digits only: "٣" or "1_000" are not numbers a model meant; 40 digits bound int() cost."""


class SchemaErrors(Exception):
    """All problems found in one value, each as ``"path: problem"``."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


def coerce_arguments(schema: Mapping[str, Any], arguments: Any) -> dict[str, Any]:
    """Return ``arguments`` coerced to ``schema`` (an object schema) or raise SchemaErrors."""
    if arguments is None:
        arguments = {}
    errors: list[str] = []
    value = _Coercer(schema, errors).coerce(schema, arguments, "")
    if errors:
        raise SchemaErrors(errors)
    if not isinstance(value, dict):
        raise SchemaErrors([f"arguments: expected an object, got {_show(arguments)}"])
    return value


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _type_names(schema: Mapping[str, Any]) -> list[str]:
    t = schema.get("type")
    if t is None:
        return []
    return [t] if isinstance(t, str) else list(t)


class _Coercer:
    def __init__(self, root: Mapping[str, Any], errors: list[str]) -> None:
        self.root = root
        self.errors = errors

    def fail(self, path: str, message: str) -> None:
        self.errors.append(f"{path or 'arguments'}: {message}")

    def resolve(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        seen = 0
        while "$ref" in schema and seen < 32:
            ref = str(schema["$ref"])
            if not ref.startswith("#/"):
                return {}
            target: Any = self.root
            for part in ref[2:].split("/"):
                target = target.get(part, {}) if isinstance(target, Mapping) else {}
            extra = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**target, **extra}
            seen += 1
        return schema

    def coerce(self, schema: Mapping[str, Any], value: Any, path: str) -> Any:
        schema = self.resolve(schema)
        for key in ("anyOf", "oneOf"):
            if key in schema:
                return self.coerce_union(schema, schema[key], value, path)
        for sub in schema.get("allOf", []):
            value = self.coerce(sub, value, path)
        types = _type_names(schema)
        if types:
            value = self.coerce_types(schema, types, value, path)
        if "enum" in schema:
            value = self.check_enum(schema["enum"], value, path)
        if "const" in schema and value != schema["const"]:
            self.fail(path, f"must be {_show(schema['const'])}, got {_show(value)}")
        return value

    def coerce_union(self, schema: Mapping[str, Any], options: list[Any], value: Any, path: str) -> Any:
        base = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
        # Try exact-type branches first so that "3" stays a string when a string is allowed.
        ordered = sorted(options, key=lambda o: 0 if _matches_exactly(self.resolve(o), value) else 1)
        messages: list[str] = []
        for option in ordered:
            trial: list[str] = []
            result = _Coercer(self.root, trial).coerce({**base, **option}, value, path)
            if not trial:
                return result
            messages.extend(trial)
        self.fail(path, f"does not match any allowed form ({messages[0].split(': ', 1)[-1]})")
        return value

    def coerce_types(self, schema: Mapping[str, Any], types: list[str], value: Any, path: str) -> Any:
        if value is None and "null" in types:
            return None
        ordered = sorted(types, key=lambda t: 0 if _is_type(t, value) else 1)
        for name in ordered:
            ok, converted = _convert(name, value)
            if ok:
                return self.check(schema, name, converted, path)
        self.fail(path, f"expected {' or '.join(types)}, got {_show(value)}")
        return value

    def check(self, schema: Mapping[str, Any], name: str, value: Any, path: str) -> Any:
        if name == "object":
            return self.coerce_object(schema, value, path)
        if name == "array":
            return self.coerce_array(schema, value, path)
        if name in ("integer", "number"):
            self.check_number(schema, value, path)
        elif name == "string":
            self.check_string(schema, value, path)
        return value

    def coerce_object(self, schema: Mapping[str, Any], value: dict[str, Any], path: str) -> dict[str, Any]:
        props: Mapping[str, Any] = schema.get("properties", {})
        required = list(schema.get("required", []))
        additional = schema.get("additionalProperties", True)
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in props:
                out[key] = self.coerce(props[key], item, _join(path, key))
            elif isinstance(additional, Mapping):
                out[key] = self.coerce(additional, item, _join(path, key))
            elif additional is not False:
                out[key] = item
            else:
                close = difflib.get_close_matches(key, list(props), n=1)
                self.fail(_join(path, key), "unknown field" + (f" (did you mean {close[0]!r}?)" if close else ""))
        for key, prop in props.items():
            if key in out:
                continue
            resolved = self.resolve(prop)
            if "default" in resolved:
                out[key] = copy.deepcopy(resolved["default"])
            elif key in required:
                self.fail(_join(path, key), "field required")
        return out

    def coerce_array(self, schema: Mapping[str, Any], value: list[Any], path: str) -> list[Any]:
        items = schema.get("items")
        out = [self.coerce(items, v, _join(path, i)) if isinstance(items, Mapping) else v for i, v in enumerate(value)]
        if "minItems" in schema and len(out) < schema["minItems"]:
            self.fail(path, f"needs at least {schema['minItems']} items, got {len(out)}")
        if "maxItems" in schema and len(out) > schema["maxItems"]:
            self.fail(path, f"takes at most {schema['maxItems']} items, got {len(out)}")
        return out

    def check_number(self, schema: Mapping[str, Any], value: float, path: str) -> None:
        bounds: tuple[tuple[str, Callable[[float], bool], str], ...] = (
            ("minimum", lambda b: value >= b, "must be ≥"),
            ("maximum", lambda b: value <= b, "must be ≤"),
            ("exclusiveMinimum", lambda b: value > b, "must be >"),
            ("exclusiveMaximum", lambda b: value < b, "must be <"),
        )
        for key, ok, words in bounds:
            if key in schema and isinstance(schema[key], int | float) and not ok(schema[key]):
                self.fail(path, f"{words} {schema[key]}, got {_show(value)}")

    def check_string(self, schema: Mapping[str, Any], value: str, path: str) -> None:
        if "minLength" in schema and len(value) < schema["minLength"]:
            self.fail(path, f"must have at least {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            self.fail(path, f"must have at most {schema['maxLength']} characters")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            self.fail(path, f"does not match pattern {schema['pattern']!r}")

    def check_enum(self, allowed: list[Any], value: Any, path: str) -> Any:
        if any(_same(option, value) for option in allowed):  # not ``in``: True == 1 in Python
            return value
        for option in allowed:  # "3" for 3, "A" for "a"; never a bool for a number or the reverse
            if isinstance(option, bool) != isinstance(value, bool):
                continue
            if str(option) == str(value) or (isinstance(option, str) and isinstance(value, str) and option.lower() == value.lower()):
                return option
        self.fail(path, f"must be one of {', '.join(_show(a) for a in allowed)}; got {_show(value)}")
        return value


def _same(a: Any, b: Any) -> bool:
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def unknown_keys(schema: Mapping[str, Any], arguments: Any) -> list[str]:
    """Top-level argument names the schema does not declare (reported, never silently dropped)."""
    if not isinstance(arguments, Mapping):
        return []
    props = schema.get("properties", {})
    if not isinstance(props, Mapping):
        return []
    return [str(k) for k in arguments if k not in props]


def lossy_conversions(schema: Mapping[str, Any], arguments: Any) -> list[str]:
    """Top-level values only a lenient validator would convert, each as ``"field: problem"``: a bool
    for a number (True is not 1), a string other than "true"/"false" or a number for a boolean.
    Validators that are lax by design (pydantic's) check these first."""
    if not isinstance(arguments, Mapping):
        return []
    props = schema.get("properties", {})
    out = []
    for key, value in arguments.items():
        types = _type_names(props.get(key, {})) if isinstance(props, Mapping) else []
        if not types or any(_is_type(t, value) for t in types):
            continue
        if isinstance(value, bool) and ("integer" in types or "number" in types) or "boolean" in types and not _to_boolean(value)[0] and not (
                isinstance(value, str) and "string" in types):
            out.append(f"{key}: expected {' or '.join(types)}, got {_show(value)}")
    return out


def _is_type(name: str, value: Any) -> bool:
    checks: dict[str, bool] = {
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, int | float) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
        "object": isinstance(value, dict),
        "array": isinstance(value, list),
        "null": value is None,
    }
    return checks.get(name, False)


def _matches_exactly(schema: Mapping[str, Any], value: Any) -> bool:
    return any(_is_type(t, value) for t in _type_names(schema))


def _to_integer(value: Any) -> tuple[bool, Any]:
    if isinstance(value, str) and _INT_RE.match(value.strip()):
        return True, int(value.strip())
    if isinstance(value, float) and value.is_integer():
        return True, int(value)
    return False, None


def _to_number(value: Any) -> tuple[bool, Any]:
    if not isinstance(value, str) or len(value) > 64 or not _NUMBER_RE.match(value.strip()):
        return False, None
    text = value.strip()
    try:
        number = float(text)
    except ValueError:
        return False, None
    if not math.isfinite(number):
        return False, None
    return True, int(text) if _INT_RE.match(text) else number


def _to_boolean(value: Any) -> tuple[bool, Any]:
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return True, value.strip().lower() in _TRUE
    return False, None


def _to_string(value: Any) -> tuple[bool, Any]:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return True, str(value)
    return False, None


def _from_json_text(name: str, value: Any) -> tuple[bool, Any]:
    if not isinstance(value, str):
        return False, None
    try:
        parsed = json.loads(value)
    except ValueError:
        return False, None
    return (True, parsed) if _is_type(name, parsed) else (False, None)


_CONVERTERS = {"integer": _to_integer, "number": _to_number, "boolean": _to_boolean, "string": _to_string}


def _convert(name: str, value: Any) -> tuple[bool, Any]:
    """Lossless conversion of ``value`` to JSON type ``name``; (False, None) when unsafe."""
    if _is_type(name, value):
        return True, value
    if name in ("object", "array"):
        return _from_json_text(name, value)
    converter = _CONVERTERS.get(name)
    return converter(value) if converter else (False, None)
