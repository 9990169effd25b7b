"""Tool calls written as text by open models, normalised to ``ToolCall``.

Served without a tool-call parser (or through one that missed), open models put their calls in
the message text, each family in its own dialect:

- Hermes / Qwen 2.5: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (the closing tag
  is often missing at the end of a message);
- Qwen3-Coder: ``<tool_call><function=f><parameter=k>v</parameter></function></tool_call>``;
- Llama 3.x: ``<|python_tag|>{"name": ..., "parameters": {...}}`` (several separated by ``;``) or
  ``<|python_tag|>brave_search.call(query="...")``;
- Llama 4: ``<|python_start|>[get_weather(city="Paris")]<|python_end|>``;
- Mistral: ``[TOOL_CALLS] [{"name": ..., "arguments": {...}}]`` or ``[TOOL_CALLS]f[ARGS]{...}``;
- DeepSeek V3 / V3.1: ``<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f`` then
  a fenced JSON block, or ``f<｜tool▁sep｜>{...}``, closed by ``<｜tool▁call▁end｜>``;
- Doubao: ``<|FunctionCallBegin|>[{"name": ..., "parameters": {...}}]<|FunctionCallEnd|>``.

``extract_text_tool_calls`` recognises these by their markers (it returns None when there are
none, so plain JSON is left to other parsers) and repairs broken argument JSON with json-repair.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from saber.llm.types import ToolCall

__all__ = ["TextToolCalls", "extract_text_tool_calls", "loads_lenient"]


@dataclass(frozen=True, kw_only=True, slots=True)
class TextToolCalls:
    """Calls found in a model's text, and the dialect they were written in."""

    format: str
    """One of "hermes", "qwen_xml", "llama_python_tag", "pythonic" (Llama 4's ``<|python_start|>``),
    "mistral", "deepseek", "doubao"."""
    calls: tuple[ToolCall, ...]
    content: str = ""
    """The text outside the calls (reasoning or prose the model wrote around them)."""
    warnings: tuple[str, ...] = ()


def loads_lenient(text: str) -> tuple[Any, bool]:
    """``(value, repaired)``: strict JSON first, json-repair second; ``(None, True)`` when hopeless."""
    try:
        return json.loads(text), False
    except ValueError:
        pass
    import json_repair  # loaded when a model first writes broken JSON, not by every process that might

    try:
        value = json_repair.repair_json(text, return_objects=True)
    except Exception:  # json-repair is best effort; any failure means "no JSON here"
        return None, True
    return (None if value == "" else value), True


# -- call objects ------------------------------------------------------------------------------

_NAME_KEYS = ("name", "function", "tool", "tool_name")
_ARG_KEYS = ("arguments", "parameters", "args", "input", "params")


def _arguments(value: Any, warnings: list[str], name: str) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str):
        if not value.strip():
            return {}
        value, repaired = loads_lenient(value)
        if repaired:
            warnings.append(f"{name}: repaired broken JSON arguments")
    if isinstance(value, Mapping):
        return dict(value)
    warnings.append(f"{name}: arguments are not an object ({type(value).__name__}); ignored")
    return {}


def _call_from_object(obj: Any, index: int, warnings: list[str]) -> ToolCall | None:
    if not isinstance(obj, Mapping):
        return None
    if isinstance(obj.get("function"), Mapping):  # OpenAI-style {"id", "type", "function": {...}}
        inner = _call_from_object(obj["function"], index, warnings)
        if inner is not None and isinstance(obj.get("id"), str) and obj["id"]:
            return ToolCall(id=obj["id"], name=inner.name, arguments=inner.arguments)
        return inner
    name = next((obj[k] for k in _NAME_KEYS if isinstance(obj.get(k), str) and obj[k].strip()), None)
    if name is None:
        return None
    raw_args = next((obj[k] for k in _ARG_KEYS if k in obj), None)
    call_id = obj.get("id") if isinstance(obj.get("id"), str) and obj.get("id") else f"call_{index}"
    return ToolCall(id=str(call_id), name=name.strip(), arguments=_arguments(raw_args, warnings, name.strip()))


def _calls_from_json(text: str, start: int, warnings: list[str]) -> list[ToolCall]:
    """Calls from a JSON object, an array of them, or several objects separated by ``;``/newlines."""
    text = _strip_fence(text.strip())
    if not text:
        return []
    value, repaired = loads_lenient(text)
    if value is None or (repaired and ";" in text and not text.startswith("[")):
        pieces = [p for p in re.split(r";\s*(?=\{)|\n\s*(?=\{)", text) if p.strip()]
        if len(pieces) > 1:
            value, repaired = [loads_lenient(p)[0] for p in pieces], False
    if repaired and value is not None:
        warnings.append("repaired broken JSON in a tool call")
    items = value if isinstance(value, list) else [value]
    calls: list[ToolCall] = []
    for item in items:
        call = _call_from_object(item, start + len(calls), warnings)
        if call is not None:
            calls.append(call)
    return calls


def _strip_fence(text: str) -> str:
    match = re.fullmatch(r"```[\w-]*\s*(.*?)\s*(?:```)?", text, re.S)
    return match.group(1) if match else text


# -- dialects ----------------------------------------------------------------------------------

_HERMES = re.compile(r"<tool_call>(.*?)(?:</tool_call>|(?=<tool_call>)|\Z)", re.S)
_QWEN_FUNC = re.compile(r"<function=([^>\s]+)>(.*?)(?:</function>|(?=<function=)|\Z)", re.S)
_QWEN_PARAM = re.compile(r"<parameter=([^>\s]+)>(.*?)(?:</parameter>|(?=<parameter=)|(?=</function>)|\Z)", re.S)


def _hermes(text: str) -> TextToolCalls | None:
    if "<tool_call>" not in text and "<function=" not in text:
        return None
    warnings: list[str] = []
    if "<function=" in text:
        calls = []
        for i, match in enumerate(_QWEN_FUNC.finditer(text)):
            args = {k: _xml_value(v) for k, v in _QWEN_PARAM.findall(match.group(2))}
            calls.append(ToolCall(id=f"call_{i}", name=match.group(1).strip(), arguments=args))
        content = _QWEN_FUNC.sub("", text).replace("<tool_call>", "").replace("</tool_call>", "")
        return TextToolCalls(format="qwen_xml", calls=tuple(calls), content=content.strip(), warnings=tuple(warnings))
    found: list[ToolCall] = []
    for match in _HERMES.finditer(text):
        found.extend(_calls_from_json(match.group(1), len(found), warnings))
    if "</tool_call>" not in text:
        warnings.append("the closing </tool_call> tag is missing")
    return TextToolCalls(format="hermes", calls=tuple(found), content=_HERMES.sub("", text).strip(), warnings=tuple(warnings))


def _xml_value(raw: str) -> Any:
    """Qwen3-Coder parameter values are text; objects and arrays arrive as JSON."""
    value = raw.strip("\n")
    stripped = value.strip()
    if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
        parsed, _ = loads_lenient(stripped)
        if parsed is not None:
            return parsed
    return value


_LLAMA_END = re.compile(r"<\|(?:eom_id|eot_id|end_of_text)\|>")


_LLAMA4 = re.compile(r"<\|python_start\|>(.*?)(?:<\|python_end\|>|(?=<\|python_start\|>)|\Z)", re.S)


def _llama(text: str) -> TextToolCalls | None:
    if "<|python_start|>" in text:  # Llama 4: <|python_start|>[f(x=1), g(y=2)]<|python_end|>
        warnings: list[str] = []
        found: list[ToolCall] = []
        for match in _LLAMA4.finditer(text):
            found.extend(_python_calls(_LLAMA_END.split(match.group(1))[0].strip(), warnings, len(found)))
        content = text.split("<|python_start|>", 1)[0].strip()
        return TextToolCalls(format="pythonic", calls=tuple(found), content=content, warnings=tuple(warnings))
    if "<|python_tag|>" not in text:
        return None
    before, _, body = text.partition("<|python_tag|>")
    body = _LLAMA_END.split(body)[0].strip()
    warnings = []
    calls = _python_calls(body, []) if body[:1] == "[" else []  # a pythonic list, not JSON
    if not calls and body[:1] in ("{", "[", "`"):
        calls = _calls_from_json(body, 0, warnings)
    if not calls:
        calls = _python_calls(body, warnings)
    return TextToolCalls(format="llama_python_tag", calls=tuple(calls), content=before.strip(), warnings=tuple(warnings))


def _python_calls(body: str, warnings: list[str], start: int = 0) -> list[ToolCall]:
    """Pythonic calls with keyword arguments: Llama's built-in tool syntax
    (``brave_search.call(query="x")``) one per line or ``;``, or a list ``[f(x=1), g(y=2)]``.

    Positional arguments need the tool's schema to be named, which this layer does not have:
    the planner (``saber.planner.pythonic``) reads those."""
    calls: list[ToolCall] = []
    for line in _python_exprs(body, warnings):
        expr = line
        if not isinstance(expr, ast.Call) or expr.args:
            continue
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr == "call":
            func = func.value
        name = ast.unparse(func)
        try:
            args = {kw.arg: ast.literal_eval(kw.value) for kw in expr.keywords if kw.arg}
        except ValueError:
            warnings.append(f"{name}: arguments are not literals")
            continue
        calls.append(ToolCall(id=f"call_{start + len(calls)}", name=name, arguments=args))
    return calls


def _python_exprs(body: str, warnings: list[str]) -> list[ast.expr]:
    """The expressions of ``body``: a whole list of calls, else one per line or ``;``."""
    try:
        whole = ast.parse(body.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        whole = None
    if isinstance(whole, ast.List | ast.Tuple):
        return list(whole.elts)
    exprs: list[ast.expr] = []
    for line in re.split(r";|\n", body):
        line = line.strip()
        if not line:
            continue
        try:
            exprs.append(ast.parse(line, mode="eval").body)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            warnings.append(f"not a call: {line[:60]!r}")
    return exprs


_MISTRAL_NAMED = re.compile(r"\[TOOL_CALLS\]\s*([A-Za-z_][\w.-]*)\s*(?:\[CALL_ID\]\s*(\w+)\s*)?\[ARGS\]")


def _mistral(text: str) -> TextToolCalls | None:
    if "[TOOL_CALLS]" not in text:
        return None
    warnings: list[str] = []
    content = text.split("[TOOL_CALLS]", 1)[0].strip()
    calls: list[ToolCall] = []
    named = list(_MISTRAL_NAMED.finditer(text))
    if named:  # v11 tokenizer: [TOOL_CALLS]name[ARGS]{...}
        for i, match in enumerate(named):
            end = named[i + 1].start() if i + 1 < len(named) else len(text)
            chunk = text[match.end():end].split("</s>")[0]
            args = _arguments(chunk.strip() or "{}", warnings, match.group(1))
            calls.append(ToolCall(id=match.group(2) or f"call_{i}", name=match.group(1), arguments=args))
    else:
        for chunk in text.split("[TOOL_CALLS]")[1:]:
            calls.extend(_calls_from_json(chunk.split("</s>")[0], len(calls), warnings))
    return TextToolCalls(format="mistral", calls=tuple(calls), content=content, warnings=tuple(warnings))


# DeepSeek writes "｜" (U+FF5C) and "▁" (U+2581); some servers turn them into ASCII "|" and "_".
_DS_CALL = re.compile(
    r"<[｜|]tool[▁_]call[▁_]begin[｜|]>(.*?)(?:<[｜|]tool[▁_]call[▁_]end[｜|]>|(?=<[｜|]tool[▁_]call[▁_]begin)|\Z)", re.S
)
_DS_SEP = re.compile(r"<[｜|]tool[▁_]sep[｜|]>")
_DS_ANY = re.compile(r"<[｜|]tool[▁_]calls?[▁_](?:begin|end)[｜|]>")


def _deepseek(text: str) -> TextToolCalls | None:
    if not _DS_ANY.search(text):
        return None
    warnings: list[str] = []
    calls: list[ToolCall] = []
    for match in _DS_CALL.finditer(text):
        parts = _DS_SEP.split(match.group(1), maxsplit=1)
        if len(parts) != 2:
            warnings.append("a DeepSeek tool call without a separator was skipped")
            continue
        head, rest = parts[0].strip(), parts[1]
        if head in ("function", ""):  # V3: function<sep>name\n```json\n{...}\n```
            name, _, args_text = rest.strip().partition("\n")
        else:  # V3.1: name<sep>{...}
            name, args_text = head, rest
        name = name.strip()
        args = _arguments(_strip_fence(args_text.strip()) or "{}", warnings, name)
        calls.append(ToolCall(id=f"call_{len(calls)}", name=name, arguments=args))
    content = re.split(r"<[｜|]tool[▁_]calls?[▁_]begin[｜|]>", text, maxsplit=1)[0].strip()
    return TextToolCalls(format="deepseek", calls=tuple(calls), content=content, warnings=tuple(warnings))


_DOUBAO = re.compile(r"<\|FunctionCallBegin\|>(.*?)(?:<\|FunctionCallEnd\|>|\Z)", re.S)


def _doubao(text: str) -> TextToolCalls | None:
    if "<|FunctionCallBegin|>" not in text:
        return None
    warnings: list[str] = []
    calls: list[ToolCall] = []
    for match in _DOUBAO.finditer(text):
        calls.extend(_calls_from_json(match.group(1), len(calls), warnings))
    return TextToolCalls(format="doubao", calls=tuple(calls), content=_DOUBAO.sub("", text).strip(), warnings=tuple(warnings))


_DIALECTS: tuple[Callable[[str], TextToolCalls | None], ...] = (_doubao, _deepseek, _mistral, _llama, _hermes)


def extract_text_tool_calls(text: str) -> TextToolCalls | None:
    """The tool calls in ``text`` when it uses one of the dialects above, else None.

    A dialect's marker with no readable call in it still returns a result (with no calls and a
    warning), so the caller can tell "the model tried to call a tool" from plain prose.
    """
    for dialect in _DIALECTS:
        found = dialect(text)
        if found is not None:
            if not found.calls:
                return TextToolCalls(format=found.format, calls=(), content=found.content,
                                     warnings=(*found.warnings, f"{found.format} markers without a readable call"))
            return found
    return None
