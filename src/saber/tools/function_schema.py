"""Build a tool's JSON Schema and validator from a plain Python function.

Type hints become the schema through a pydantic model made with ``create_model``; the docstring
(Google, NumPy or Sphinx style, detected by ``docstring_parser``) gives the tool's description
and each parameter's. The same pydantic model validates the model's arguments, so "3" becomes 3
where the hint says ``int``.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_type_hints

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from saber.tools.coerce import lossy_conversions
from saber.tools.errors import ToolArgumentError


@dataclass(frozen=True, kw_only=True, slots=True)
class FunctionSchema:
    name: str
    description: str
    json_schema: dict[str, Any]
    model: type[BaseModel]
    takes_context: bool = False


def function_schema(func: Callable[..., Any], *, name: str | None = None, description: str | None = None) -> FunctionSchema:
    """Describe ``func`` as a tool: name, description and the JSON Schema of its arguments."""
    doc = docstring_parser.parse(inspect.getdoc(func) or "")
    param_docs = {p.arg_name: (p.description or "").strip() for p in doc.params}
    hints = get_type_hints(func, include_extras=True)
    fields: dict[str, Any] = {}
    for param in inspect.signature(func).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(param.name, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, Field(default, description=param_docs.get(param.name) or None))
    model_name = "".join(part.capitalize() for part in (name or func.__name__).split("_")) + "Args"
    model = create_model(model_name, __config__=ConfigDict(extra="ignore"), **fields)
    schema = _clean(model.model_json_schema())
    summary = "\n\n".join(p for p in (doc.short_description, doc.long_description) if p)
    return FunctionSchema(
        name=name or func.__name__,
        description=(description or summary or "").strip(),
        json_schema=schema,
        model=model,
    )


def validate_with_model(model: type[BaseModel], arguments: Any, tool: str) -> dict[str, Any]:
    """Validate ``arguments`` with ``model``; errors become one ToolArgumentError naming each field."""
    misspelled = _misspelled(model, arguments) + lossy_conversions(_schema_of(model), arguments)
    if misspelled:
        raise ToolArgumentError(f"{tool}: " + "; ".join(misspelled), tool=tool, errors=misspelled)
    try:
        validated = model.model_validate(arguments if arguments is not None else {})
    except ValidationError as exc:
        errors = [_format_error(err) for err in exc.errors(include_url=False)]
        raise ToolArgumentError(f"{tool}: " + "; ".join(errors), tool=tool, errors=errors) from None
    return {key: getattr(validated, key) for key in type(validated).model_fields}


@functools.cache
def _schema_of(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()


def _misspelled(model: type[BaseModel], arguments: Any) -> list[str]:
    """Unknown keys that look like a misspelling of a parameter ("max_result" for "max_results").

    Other unknown keys are ignored: models often add harmless extras ("reason"), and rejecting
    those would throw away good calls; a near-miss, though, would silently lose the value.
    """
    if not isinstance(arguments, dict):
        return []
    fields = list(model.model_fields)
    out = []
    for key in arguments:
        if key in fields:
            continue
        close = difflib.get_close_matches(str(key), fields, n=1, cutoff=0.75)
        if close and close[0] not in arguments:
            out.append(f"{key}: unknown field (did you mean {close[0]!r}?)")
    return out


def _format_error(err: Any) -> str:
    loc = ""
    for part in err.get("loc", ()):
        loc += f"[{part}]" if isinstance(part, int) else (f".{part}" if loc else str(part))
    message = str(err.get("msg", "invalid")).rstrip(".")
    message = message[:1].lower() + message[1:]
    return f"{loc or 'arguments'}: {message}"


def _clean(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's generated titles, which only cost prompt tokens."""
    def walk(node: Any, named_map: bool = False) -> Any:
        if isinstance(node, dict):
            if named_map:  # keys are property or definition names, values are schemas
                return {k: walk(v) for k, v in node.items()}
            return {k: walk(v, k in ("properties", "$defs")) for k, v in node.items() if k != "title"}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    cleaned: dict[str, Any] = walk(schema)
    cleaned.setdefault("properties", {})
    cleaned["type"] = "object"
    return cleaned
