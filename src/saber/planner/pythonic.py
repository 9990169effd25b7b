"""Pythonic tool calls: ``[get_weather(city='Paris'), get_time(timezone='Europe/Paris')]``.

What Llama 3.2/3.3 write (vLLM's ``pythonic`` parser), Llama 4 between ``<|python_start|>`` and
``<|python_end|>``, Llama 3.1 after ``<|python_tag|>``, Gemma and many prompted models in
```` ```python ```` / ```` ```tool_code ```` fences or as bare calls on their own lines.

The text is parsed with ``ast`` and never evaluated. A call's name is a name or a dotted name
(``spotify.play``); its arguments must be literals (strings in either quote, numbers,
True/False/None — also JSON's true/false/null —, lists, tuples, dicts, nested). A variable
assigned from an earlier call (``x = search_web(...)`` then ``write_document(content=x)``, also
``x.field``, ``x['k'][0]`` and ``f"... {x}"``) becomes a placeholder for that call's node, so
validation turns it into a ``depends_on`` edge. Anything else in an argument — an operator, a
call, a comprehension, an unknown name, ``*args``/``**kwargs`` — rejects that call with a
warning. Positional arguments take the tool's parameters in schema order; a sub-agent's first
positional argument is its goal.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from saber.planner.names import resolve_name
from saber.planner.shapes import RawNode
from saber.tools.base import Tool

_MAX_SOURCE = 200_000
"""Longer texts are not parsed as a whole (ast is fast, but a 1 MB prose answer is no plan)."""
_MAX_RUN_LINES = 120
"""Lines one call (or list of calls) may span when picked out of prose."""
_MAX_STARTS = 64

_PY_START, _PY_END, _PY_TAG = "<|python_start|>", "<|python_end|>", "<|python_tag|>"
_LLAMA4_BLOCK = re.compile(re.escape(_PY_START) + r"(.*?)(?:" + re.escape(_PY_END) + "|(?=" + re.escape(_PY_START) + r")|\Z)", re.S)
_END_TOKENS = re.compile(r"<\|(?:eom_id|eot_id|end_of_text|eom|eot)\|>")
_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n`]*\n(.*?)(?:```|\Z)", re.S)
_PY_FENCES = ("python", "py", "python3", "tool_code", "tool_call", "tool_calls", "")
_LINE_START = re.compile(r"^[ \t]*(?:[A-Za-z_]\w*\s*=\s*)?(?:print\s*\(\s*)?[\[(]?\s*[A-Za-z_][\w.]*\s*\(", re.M)
_INLINE_LIST = re.compile(r"\[\s*[A-Za-z_][\w.]*\s*\(")
_JSON_WORDS = {"true": True, "false": False, "null": None}
_MARK = "\x00"
"""Brackets a variable reference while calls are read (literal strings holding a NUL are
rejected); each becomes ``${n<k>.path}`` once the variable's node is known."""
_MARKED = re.compile("\x00([^\x00.]+)((?:\\.[^\x00.]+)*)\x00")


@dataclass(frozen=True, kw_only=True, slots=True)
class PythonicPlan:
    shape: str
    """"pythonic", or "llama_python_tag" for calls after ``<|python_tag|>``."""
    raw: list[RawNode]
    warnings: tuple[str, ...] = ()


class _Rejected(ValueError):
    """One call that is not a plain call with literal arguments."""

    def __init__(self, message: str, var: str | None = None) -> None:
        super().__init__(message)
        self.var = var


@dataclass(kw_only=True)
class _Call:
    name: str
    var: str | None
    args: list[Any]
    kwargs: dict[str, Any]
    refs: list[str] = field(default_factory=list)


def parse_pythonic(text: str, tools: Mapping[str, Tool], agents: Mapping[str, str], *, strict: bool = True) -> PythonicPlan | None:
    """The pythonic calls in ``text`` as raw nodes, or None when it holds none.

    ``strict`` reads only whole sources (the text, a Llama 4 block, a python fence, what follows
    ``<|python_tag|>``) made of nothing but calls; ``strict=False`` also picks calls out of prose:
    lines that are calls, and bracketed lists of calls inside a line. A result whose calls were
    all rejected has no nodes and says why in ``warnings``.
    """
    if len(text) > _MAX_SOURCE * 5:
        return None
    for shape, sources in _sources(text, strict):
        for source in sources:
            found = _module(source) if strict else _picked(source)
            if found is not None:
                calls, warnings = found
                return _nodes(shape, calls, warnings, tools, agents)
    return None


def _sources(text: str, strict: bool) -> Iterator[tuple[str, list[str]]]:
    if _PY_START in text:
        blocks = [_END_TOKENS.split(m.group(1))[0] for m in _LLAMA4_BLOCK.finditer(text)]
        yield "pythonic", ["\n".join(blocks)]
        return
    if _PY_TAG in text:
        body = _END_TOKENS.split(text.partition(_PY_TAG)[2])[0].strip()
        if body[:1] not in ("{", "`"):  # JSON after the tag is the text dialect's
            yield "llama_python_tag", [body]
        return
    cleaned = _END_TOKENS.sub("", text)
    fences = [body for lang, body in _FENCE.findall(cleaned) if lang.lower() in _PY_FENCES]
    yield "pythonic", [*fences, cleaned] if strict else [cleaned]


def _parse(source: str) -> list[ast.stmt] | None:
    if len(source) > _MAX_SOURCE or "(" not in source:
        return None
    try:
        return ast.parse(source.strip(), mode="exec").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _module(source: str) -> tuple[list[_Call | _Rejected], list[str]] | None:
    """Every statement of ``source`` a call (or a list of calls, or ``x = call``), else None."""
    first = next((line for line in source.splitlines() if line.strip() and not line.lstrip().startswith("#")), "")
    if not _LINE_START.match(first):
        return None  # cheap: JSON and prose are turned away before ast sees them
    body = _parse(source)
    warnings: list[str] = []
    if not body:
        body = _cut_off_list(source)
        if not body:
            return None
        warnings.append("the pythonic call list was cut off; kept its complete calls")
    calls: list[_Call | _Rejected] = []
    for stmt in body:
        found = _statement(stmt)
        if found is None:
            return None
        calls.extend(found)
    return calls, warnings


def _cut_off_list(source: str) -> list[ast.stmt] | None:
    """A ``[f(...), g(...`` the model stopped writing in the middle of: its complete calls."""
    text = source.strip()
    if not text.startswith("[") or _close(text, 0) is not None:
        return None
    ends = _top_level_commas(text)
    for end in reversed(ends[-3:]):
        body = _parse(text[:end] + "]")
        if body:
            return body
    return None


def _top_level_commas(text: str) -> list[int]:
    """Positions of the commas between the elements of the list ``text`` opens."""
    commas: list[int] = []
    depth, i, n = 0, 0, len(text)
    while i < n:
        ch = text[i]
        if ch in ("'", '"'):
            quote = text[i:i + 3] if text[i:i + 3] in _TRIPLES else ch
            i += len(quote)
            while i < n and not text.startswith(quote, i):
                i += 2 if text[i] == "\\" else 1
            i += len(quote)
            continue
        if ch in _PAIRS:
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 1:
            commas.append(i)
        i += 1
    return commas


def _picked(source: str) -> tuple[list[_Call | _Rejected], list[str]] | None:
    """Calls on lines of their own in prose, else bracketed lists of calls inside a line."""
    lines = source.splitlines()
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    calls: list[_Call | _Rejected] = []
    line_no = 0
    tries = 0
    while line_no < len(lines) and tries < _MAX_STARTS:
        if not _LINE_START.match(lines[line_no]):
            line_no += 1
            continue
        tries += 1
        end = _run_end(source, lines, offsets, line_no)
        body = _parse("\n".join(lines[line_no:end])) if end else None
        found = [_statement(s) for s in body] if body else [None]
        if body and all(f is not None for f in found):
            calls.extend(c for f in found if f is not None for c in f)
            line_no = end
        else:
            line_no += 1
    if calls:
        return calls, []
    for count, match in enumerate(_INLINE_LIST.finditer(source)):
        if count >= _MAX_STARTS:
            break
        closed = _close(source, match.start())
        body = _parse(source[match.start():closed]) if closed else None
        inline = _statement(body[0]) if body and len(body) == 1 else None
        if inline:
            calls.extend(inline)
    return (calls, []) if calls else None


def _run_end(source: str, lines: list[str], offsets: list[int], line_no: int) -> int:
    """The line after the one where the call starting on ``line_no`` closes its brackets (0: never)."""
    line = lines[line_no]
    first = min((i for i in (line.find("("), line.find("[")) if i >= 0), default=-1)
    closed = _close(source, offsets[line_no] + first)
    if closed is None:
        return 0
    end = line_no
    while end < len(lines) and offsets[end + 1] < closed:
        end += 1
    end += 1
    return end if end - line_no <= _MAX_RUN_LINES else 0


_PAIRS = {"(": ")", "[": "]", "{": "}"}
_TRIPLES = ("'''", '"""')


def _close(source: str, start: int) -> int | None:
    """Index just past the bracket matching ``source[start]``, minding strings and comments."""
    stack: list[str] = []
    i, n = start, len(source)
    while i < n:
        ch = source[i]
        if ch in ("'", '"'):
            quote = source[i:i + 3] if source[i:i + 3] in _TRIPLES else ch
            i += len(quote)
            while i < n and not source.startswith(quote, i) and (len(quote) == 3 or source[i] != "\n"):
                i += 2 if source[i] == "\\" else 1
            i += len(quote)
            continue
        if ch == "#":
            newline = source.find("\n", i)
            i = n if newline < 0 else newline
            continue
        if ch in _PAIRS:
            stack.append(_PAIRS[ch])
        elif ch in ")]}":
            if not stack or stack.pop() != ch:
                return None
            if not stack:
                return i + 1
        i += 1
    return None


def _statement(stmt: ast.stmt) -> list[_Call | _Rejected] | None:
    """The calls in one statement; None when it is not a call statement at all."""
    var: str | None = None
    value: ast.expr
    if isinstance(stmt, ast.Expr):
        value = stmt.value
    elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        var, value = stmt.targets[0].id, stmt.value
    else:
        return None
    if isinstance(value, ast.List | ast.Tuple) and var is None:
        items = [_unprint(e) for e in value.elts]
        if not items or not all(isinstance(e, ast.Call) for e in items):
            return None
        return [_call(e, None) for e in items if isinstance(e, ast.Call)]
    value = _unprint(value)
    if not isinstance(value, ast.Call) or _dotted(value.func) is None:
        return None
    return [_call(value, var)]


def _unprint(expr: ast.expr) -> ast.expr:
    """Gemma's ``print(f(...))`` in a tool_code fence is the call ``f(...)``."""
    if (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "print"
            and len(expr.args) == 1 and not expr.keywords and isinstance(expr.args[0], ast.Call)):
        return expr.args[0]
    return expr


def _dotted(func: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return None
    parts.append(func.id)
    return ".".join(reversed(parts))


def _call(expr: ast.Call, var: str | None) -> _Call | _Rejected:
    name = _dotted(expr.func)
    if name is None:
        return _Rejected(f"{ast.unparse(expr.func)[:60]}: not a function name", var)
    if any(isinstance(a, ast.Starred) for a in expr.args) or any(kw.arg is None for kw in expr.keywords):
        return _Rejected(f"{name}: *args and **kwargs are not allowed", var)
    call = _Call(name=name, var=var, args=[], kwargs={})
    try:
        call.args = [_value(a, call.refs) for a in expr.args]
        for kw in expr.keywords:
            assert kw.arg is not None
            if kw.arg in call.kwargs:
                raise _Rejected(f"got two values for {kw.arg!r}")
            call.kwargs[kw.arg] = _value(kw.value, call.refs)
    except _Rejected as exc:
        return _Rejected(f"{name}: {exc}", var)
    return call


def _value(node: ast.expr, refs: list[str]) -> Any:
    """A literal argument as a JSON value; a variable as ``${var...}`` (resolved later)."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str) and _MARK in node.value:
            raise _Rejected("NUL characters are not allowed")
        if node.value is None or isinstance(node.value, str | bool | int | float):
            return node.value
        raise _Rejected(f"{type(node.value).__name__} values are not allowed")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd) and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, int | float) and not isinstance(node.operand.value, bool):
        return -node.operand.value if isinstance(node.op, ast.USub) else node.operand.value
    if isinstance(node, ast.List | ast.Tuple):
        return [_value(e, refs) for e in node.elts]
    if isinstance(node, ast.Dict):
        out: dict[str, Any] = {}
        for key, item in zip(node.keys, node.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str | int) and not isinstance(key.value, bool)):
                raise _Rejected("dict keys must be strings")
            out[str(key.value)] = _value(item, refs)
        return out
    if isinstance(node, ast.Name) and node.id in _JSON_WORDS:
        return _JSON_WORDS[node.id]
    if isinstance(node, ast.JoinedStr):
        return "".join(_fstring_part(part, refs) for part in node.values)
    reference = _reference(node)
    if reference is not None:
        refs.append(reference[0])
        return _MARK + ".".join(reference) + _MARK
    raise _Rejected(f"{ast.unparse(node)[:60]!r} is not a literal")


def _fstring_part(part: ast.expr, refs: list[str]) -> str:
    if isinstance(part, ast.Constant) and isinstance(part.value, str):
        return part.value
    if isinstance(part, ast.FormattedValue) and part.format_spec is None and part.conversion == -1:
        value = _value(part.value, refs)
        if isinstance(value, str):
            return value
    raise _Rejected("an f-string may only insert a variable")


def _reference(node: ast.expr) -> list[str] | None:
    """``x``, ``x.field``, ``x['k'][0]`` → ``["x", "field", ...]`` (checked against variables later)."""
    path: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            path.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                and isinstance(node.slice.value, str | int) and not isinstance(node.slice.value, bool):
            path.append(str(node.slice.value))
            node = node.value
        elif isinstance(node, ast.Name):
            return [node.id, *reversed(path)]
        else:
            return None


def _nodes(shape: str, calls: list[_Call | _Rejected], warnings: list[str],
           tools: Mapping[str, Tool], agents: Mapping[str, str]) -> PythonicPlan:
    known = {**tools, **agents}
    variables: dict[str, str] = {}
    lost: set[str] = set()
    raw: list[RawNode] = []
    for position, call in enumerate(calls, start=1):
        node_id = f"n{position}"
        node, problem = _node(call, node_id, variables, lost, tools, agents, known) if isinstance(call, _Call) \
            else (None, str(call))
        if node is None:
            warnings.append(f"rejected a pythonic call: {problem}")
            if call.var:
                lost.add(call.var)
            continue
        raw.append(node)
        if isinstance(call, _Call) and call.var:
            variables[call.var] = node_id
            lost.discard(call.var)
    return PythonicPlan(shape=shape, raw=raw, warnings=tuple(warnings))


def _node(call: _Call, node_id: str, variables: Mapping[str, str], lost: set[str], tools: Mapping[str, Tool],
          agents: Mapping[str, str], known: Mapping[str, Any]) -> tuple[RawNode | None, str]:
    for ref in call.refs:
        if ref in lost:
            return None, f"{call.name}: uses {ref}, whose call was rejected"
        if ref not in variables:
            return None, f"{call.name}: {ref!r} is not a literal nor the result of an earlier call"
    name = resolve_name(call.name, known)
    if name not in known and name.endswith(".call") and resolve_name(name[:-5], known) in known:
        name = resolve_name(name[:-5], known)  # Llama 3.1's built-in tool syntax: brave_search.call(...)
    params = {k: _rename(v, variables) for k, v in call.kwargs.items()}
    args = [_rename(v, variables) for v in call.args]
    goal = ""
    if name in agents and name not in tools:
        if args and isinstance(args[0], str):
            goal, args = args[0], args[1:]
        if args:
            return None, f"{name}: a sub-agent takes its goal as the only positional argument"
    elif name in tools:
        order = [p.name for p in tools[name].parameters]
        if len(args) > len(order):
            return None, f"{name} takes {len(order)} positional argument(s), got {len(args)}"
        for key, value in zip(order, args, strict=False):
            if key in params:
                return None, f"{name}: got two values for {key!r}"
            params[key] = value
    elif args:
        params.update({f"arg{i}": v for i, v in enumerate(args)})
    deps = list(dict.fromkeys(variables[r] for r in call.refs))
    return {"id": node_id, "type": None, "tool": name, "agent": None, "goal": goal, "params": params,
            "depends_on": deps or None, "race_group": None}, ""


def _rename(value: Any, variables: Mapping[str, str]) -> Any:
    """A marked variable reference → ``${n<k>.path}``."""
    if isinstance(value, str) and _MARK in value:
        return _MARKED.sub(lambda m: "${" + variables[m.group(1)] + m.group(2) + "}", value)
    if isinstance(value, list):
        return [_rename(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: _rename(v, variables) for k, v in value.items()}
    return value
