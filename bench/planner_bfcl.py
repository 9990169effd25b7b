"""Ground-truth calls written by others, rendered into each output shape a model may use.

The cases are the Berkeley Function Calling Leaderboard's (BFCL v4, Apache-2.0): function docs
and possible answers shipped inside the ``bfcl-eval`` wheel on PyPI, read from its ``data/``
folder (``pip install --no-deps bfcl-eval==2026.3.23``: only the data is used, nothing of it is
imported or run, and nothing is downloaded at run time). Categories with Python-typed calls:
simple_python, multiple, parallel, parallel_multiple and their live_* counterparts; Java and
JavaScript ones are left out (their arguments are source text in those languages).

Each case's first possible answer per parameter is the ground truth ("" there means the
parameter may be left out, so it is). The same calls are rendered into every shape below; a
shape is exact when the parser returns the same calls, in order, with equal arguments.
"""

from __future__ import annotations

import ast
import importlib.util
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from saber.tools import Tool
from saber.tools.errors import ToolArgumentError

CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple",
              "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")
Call = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Case:
    id: str
    tools: dict[str, Tool]
    calls: list[Call]


def data_dir(explicit: str | None = None) -> Path | None:
    """``bfcl_eval``'s data folder, found without importing the package (or ``explicit``)."""
    if explicit:
        return Path(explicit)
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "data"
    return folder if folder.is_dir() else None


def load_cases(folder: Path) -> tuple[list[Case], int]:
    """The cases, and how many were skipped (a function doc no JSON Schema can express)."""
    cases: list[Case] = []
    skipped = 0
    for category in CATEGORIES:
        answers = {row["id"]: row["ground_truth"] for row in _rows(folder / "possible_answer" / f"BFCL_v4_{category}.json")}
        for row in _rows(folder / f"BFCL_v4_{category}.json"):
            try:
                tools = {f["name"]: _tool(f) for f in row["function"]}
            except (ValueError, TypeError, KeyError):
                skipped += 1
                continue
            calls = [_truth(entry) for entry in answers[row["id"]]]
            cases.append(Case(id=row["id"], tools=tools, calls=calls))
    return cases, skipped


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def _truth(entry: dict[str, dict[str, list[Any]]]) -> Call:
    ((name, options),) = entry.items()
    return name, _chosen(options)


def _chosen(options: dict[str, list[Any]]) -> dict[str, Any]:
    """The first possible value of each parameter; nested objects list options per key too."""
    out: dict[str, Any] = {}
    for key, values in options.items():
        if not values or values[0] == "":
            continue
        out[key] = _nested(values[0])
    return out


def _nested(value: Any) -> Any:
    if isinstance(value, dict) and value and all(isinstance(v, list) for v in value.values()):
        return _chosen(value)
    if isinstance(value, list) and value and all(isinstance(v, dict) and v and all(isinstance(x, list) for x in v.values()) for v in value):
        return [_chosen(v) for v in value]
    return value


def same_calls(got: list[Call], case: Case) -> bool:
    """Exact match; a parameter the ground truth leaves out may hold its schema default
    (validation fills defaults in, BFCL counts that as the same call)."""
    if len(got) != len(case.calls):
        return False
    for (name, args), (want_name, want) in zip(got, case.calls, strict=True):
        tool = case.tools.get(name)
        if name != want_name or tool is None or not _same(args, want, tool.schema):
            return False
    return True


def fits_its_schema(case: Case) -> bool:
    """The ground truth passes its own function doc's validation unchanged (a few BFCL answers
    do not: a required parameter left out, "2" where the doc says integer, an enum's case)."""
    for name, args in case.calls:
        tool = case.tools.get(name)
        try:
            if tool is None or not _same(tool.validate(args), args, tool.schema):
                return False
        except ToolArgumentError:
            return False
    return True


def _same(got: Any, want: Any, schema: Any) -> bool:
    if isinstance(got, dict) and isinstance(want, dict):
        props = schema.get("properties", {}) if isinstance(schema, dict) else {}
        for key, value in got.items():
            if key not in want:
                prop = props.get(key, {})
                if not (isinstance(prop, dict) and "default" in prop and prop["default"] == value):
                    return False
            elif not _same(value, want[key], props.get(key, {})):
                return False
        return set(want) <= set(got)
    if isinstance(got, list) and isinstance(want, list):
        items = schema.get("items", {}) if isinstance(schema, dict) else {}
        return len(got) == len(want) and all(_same(g, w, items) for g, w in zip(got, want, strict=True))
    return bool(got == want)


_TYPES = {"dict": "object", "float": "number", "tuple": "array", "list": "array", "int": "integer",
          "str": "string", "bool": "boolean", "String": "string", "any": None, "Any": None}


def _schema(value: Any) -> Any:
    """BFCL's Python-flavoured types (dict, float, tuple, any) as JSON Schema ones."""
    if isinstance(value, list):
        return [_schema(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _schema(v) for k, v in value.items() if k != "type"}
    if "type" in value:
        kind = _TYPES.get(value["type"], value["type"]) if isinstance(value["type"], str) else value["type"]
        if kind is not None:
            out["type"] = kind
    return out


def _never(args: dict[str, Any]) -> Any:
    raise RuntimeError("benchmark tools are never run")


def _tool(doc: dict[str, Any]) -> Tool:
    return Tool.from_json_schema(doc["name"], doc.get("description", ""), _schema(doc.get("parameters") or {}), _never)


# -- shapes ---------------------------------------------------------------------------------


def _py(value: Any) -> str:
    return repr(value)


def _kwargs(args: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_py(v)}" for k, v in args.items())


def _pyname_ok(calls: list[Call]) -> bool:
    """Pythonic shapes need names and keywords Python can spell (BFCL has a few like "from")."""
    import keyword

    return all(all(p.isidentifier() and not keyword.iskeyword(p) for p in n.split(".")) and
               all(k.isidentifier() and not keyword.iskeyword(k) for k in a) for n, a in calls)


def _positional(case: Case) -> str:
    parts = []
    for name, args in case.calls:
        order = [p.name for p in case.tools[name].parameters] if name in case.tools else []
        lead = []
        for key in order:
            if key not in args:
                break
            lead.append(key)
        rest = {k: v for k, v in args.items() if k not in lead}
        parts.append(f"{name}({', '.join([*(_py(args[k]) for k in lead), *([_kwargs(rest)] if rest else [])])})")
    return "[" + ", ".join(parts) + "]"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


SHAPES: dict[str, Callable[[Case], str | None]] = {
    "ideal JSON plan": lambda c: _dumps([{"id": f"n{i}", "type": "tool", "tool": n, "params": a, "depends_on": []}
                                          for i, (n, a) in enumerate(c.calls, start=1)]),
    "OpenAI tool_calls JSON": lambda c: _dumps({"tool_calls": [
        {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": _dumps(a)}} for i, (n, a) in enumerate(c.calls)]}),
    "Hermes <tool_call>": lambda c: "\n".join(f"<tool_call>\n{_dumps({'name': n, 'arguments': a})}\n</tool_call>" for n, a in c.calls),
    "Mistral [TOOL_CALLS]": lambda c: "[TOOL_CALLS] " + _dumps([{"name": n, "arguments": a} for n, a in c.calls]),
    "fenced JSON in prose": lambda c: "I'll call the tools.\n```json\n" + _dumps([{"name": n, "arguments": a} for n, a in c.calls]) + "\n```",
    "pythonic list (Llama 3.2/3.3)": lambda c: "[" + ", ".join(f"{n}({_kwargs(a)})" for n, a in c.calls) + "]" if _pyname_ok(c.calls) else None,
    "Llama 4 <|python_start|>": lambda c: "<|python_start|>[" + ", ".join(f"{n}({_kwargs(a)})" for n, a in c.calls) + "]<|python_end|>"
    if _pyname_ok(c.calls) else None,
    "<|python_tag|> calls": lambda c: "<|python_tag|>" + "; ".join(f"{n}({_kwargs(a)})" for n, a in c.calls) + "<|eom_id|>"
    if _pyname_ok(c.calls) else None,
    "```tool_code fence, one call a line": lambda c: "```tool_code\n" + "\n".join(f"{n}({_kwargs(a)})" for n, a in c.calls) + "\n```"
    if _pyname_ok(c.calls) else None,
    "pythonic, positional arguments": lambda c: _positional(c) if _pyname_ok(c.calls) else None,
}


# -- baselines ------------------------------------------------------------------------------


def _calls_in(value: Any) -> list[tuple[Any, Any]] | None:
    """Calls in a decoded value of the common shapes, read as naively as a hand-written parser would."""
    if isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
        value = value["tool_calls"]
    if not isinstance(value, list):
        return None
    calls: list[tuple[Any, Any]] = []
    for item in value:
        if not isinstance(item, dict):
            return None
        if isinstance(item.get("function"), dict):
            fn = item["function"]
            args = fn.get("arguments")
            calls.append((fn.get("name"), json.loads(args) if isinstance(args, str) else args))
        elif "tool" in item:
            calls.append((item["tool"], item.get("params")))
        elif "name" in item:
            calls.append((item["name"], item.get("arguments", item.get("parameters"))))
        else:
            return None
    return calls


def baseline_json(text: str) -> list[tuple[Any, Any]] | None:
    try:
        return _calls_in(json.loads(text))
    except (ValueError, TypeError):
        return None


def baseline_literal_eval(text: str) -> list[tuple[Any, Any]] | None:
    try:
        return _calls_in(ast.literal_eval(text))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
