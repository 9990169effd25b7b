"""``Tool`` and ``Param``: what a model sees of a tool (name, description, parameters) and the
callable the system runs (never serialised)."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, overload

from saber.tools.coerce import SchemaErrors, coerce_arguments
from saber.tools.errors import ToolArgumentError
from saber.tools.function_schema import function_schema, validate_with_model

Execute = Callable[[dict[str, Any]], Any]
"""Takes the validated arguments; returns the result, or an awaitable of it."""

T = TypeVar("T")
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ThreadCall(Generic[T]):
    """A sync call running in a daemon thread of its own, awaited through ``future``.

    Cancelling the await abandons the call (Python cannot stop a thread): ``thread`` tells
    whether it is still running, e.g. before deciding to start the same call again."""

    thread: threading.Thread
    future: asyncio.Future[T]


def call_in_thread(func: Callable[..., T], *args: Any) -> ThreadCall[T]:
    """Start ``func(*args)`` in a new daemon thread, with the caller's context variables.

    Not the event loop's shared executor: a call stuck past its caller's timeout keeps only its
    own thread, so it can never queue other work behind it. The result is handed back to the
    loop if anyone is still waiting for it and the loop is still open."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def deliver(ok: bool, value: Any) -> None:
        if future.done():  # the caller gave up (a timeout or a cancel)
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def main() -> None:
        try:
            outcome: tuple[bool, Any] = (True, context.run(func, *args))
        except (StopIteration, StopAsyncIteration) as exc:  # a future refuses these: it would never complete
            error = RuntimeError(f"{getattr(func, '__name__', 'the call')} raised {type(exc).__name__}")
            error.__cause__ = exc
            outcome = (False, error)
        except BaseException as exc:  # handed to the awaiting task, raised there
            outcome = (False, exc)
        try:
            loop.call_soon_threadsafe(deliver, *outcome)
        except RuntimeError:  # the loop closed while the call ran: nobody is left to tell
            log.debug("%s finished after its event loop closed", getattr(func, "__name__", func))

    thread = threading.Thread(target=main, name=f"saber-tool-{getattr(func, '__name__', 'call')}", daemon=True)
    thread.start()
    return ThreadCall(thread=thread, future=future)


@dataclass(frozen=True, kw_only=True, slots=True)
class Param:
    """One top-level parameter of a tool, as shown to a model."""

    name: str
    type: str
    """JSON Schema type; unions are joined with ``|`` ("string|null")."""
    description: str = ""
    required: bool = False
    enum: list[Any] | None = None
    default: Any = None
    has_default: bool = False


@dataclass(frozen=True, kw_only=True)
class Tool:
    """A tool: the card a model reads and the button the system presses."""

    name: str
    description: str
    schema: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    """JSON Schema (type object) of the arguments."""
    execute: Execute = field(repr=False, compare=False)
    is_mcp: bool = False
    race_group: str | None = None
    """Tools with the same race group are interchangeable sources (e.g. web search, knowledge base)."""
    validator: Callable[[dict[str, Any]], dict[str, Any]] | None = field(default=None, repr=False, compare=False)
    """Overrides schema-driven validation (``@tool`` uses the pydantic model built from hints)."""
    requires_approval: bool | Callable[[dict[str, Any]], str | None] = field(default=False, compare=False)
    """True, or a predicate on the validated arguments returning why a person must approve the call
    (None when it may run without asking)."""
    idempotent: bool = True
    """Running it twice does no more than running it once. False for a tool with side effects
    (``exec_command``, ``write_file``, MCP tools without ``readOnlyHint``/``idempotentHint``):
    the graph runtime then never retries it after a timeout or an error it may have acted
    before, only after a ``ToolError(retryable=True)`` it raises itself."""
    timeout: float | None = None
    """Seconds the tool limits each call to by itself (``exec_command``: ``exec.timeout``). The
    runtime's step timeout for it is then longer, so the tool's own limit fires first and the
    tool reports it."""

    def approval_reason(self, arguments: Mapping[str, Any]) -> str | None:
        """Why this call needs a person's yes before it runs, or None."""
        if callable(self.requires_approval):
            return self.requires_approval(dict(arguments))
        return f"{self.name} requires approval" if self.requires_approval else None

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("_", "").replace("-", "").replace(".", "").isalnum():
            raise ValueError(f"invalid tool name {self.name!r}: use letters, digits, '_', '-' or '.'")
        if self.schema.get("type", "object") != "object":
            raise ValueError(f"tool {self.name}: the parameters schema must describe an object")

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def from_json_schema(
        cls,
        name: str,
        description: str,
        schema: Mapping[str, Any] | None,
        execute: Execute,
        *,
        is_mcp: bool = False,
        race_group: str | None = None,
        idempotent: bool = True,
    ) -> Tool:
        """A tool described by JSON Schema (MCP servers, OpenAPI, other frameworks)."""
        body = dict(schema or {})
        body.setdefault("type", "object")
        body.setdefault("properties", {})
        return cls(name=name, description=description, schema=body, execute=execute, is_mcp=is_mcp, race_group=race_group,
                   idempotent=idempotent)

    # -- arguments ----------------------------------------------------------------------------

    @property
    def parameters(self) -> list[Param]:
        required = set(self.schema.get("required", []))
        params = []
        for name, prop in self.schema.get("properties", {}).items():
            prop = _resolve(self.schema, prop)
            params.append(
                Param(
                    name=name,
                    type=_type_label(self.schema, prop),
                    description=str(prop.get("description", "")),
                    required=name in required,
                    enum=list(prop["enum"]) if "enum" in prop else None,
                    default=prop.get("default"),
                    has_default="default" in prop,
                )
            )
        return params

    def validate(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """Arguments checked against the schema and coerced where safe.

        Raises ToolArgumentError whose message names each bad field ("city: field required").
        """
        if arguments is not None and not isinstance(arguments, Mapping):
            raise ToolArgumentError(f"{self.name}: arguments must be an object, got {type(arguments).__name__}", tool=self.name)
        if self.validator is not None:
            return self.validator(dict(arguments or {}))
        try:
            return coerce_arguments(self.schema, dict(arguments or {}))
        except SchemaErrors as exc:
            raise ToolArgumentError(f"{self.name}: {exc}", tool=self.name, errors=exc.errors) from None

    async def run(self, arguments: Mapping[str, Any] | None = None, *, validate: bool = True) -> Any:
        """Validate, then execute: async tools are awaited, sync tools run in a thread of their own
        (see ``call_in_thread``)."""
        args = self.validate(arguments) if validate else dict(arguments or {})
        if _is_async(self.execute):
            result = await self.execute(args)
        else:
            result = await call_in_thread(self.execute, args).future
        if inspect.isawaitable(result):
            result = await result
        return result

    @property
    def is_sync(self) -> bool:
        """True when ``execute`` is a plain function (run in a thread), False for a coroutine one."""
        return not _is_async(self.execute)

    # -- renderings ---------------------------------------------------------------------------

    def to_openai(self) -> dict[str, Any]:
        """An entry of OpenAI's ``tools`` list."""
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": self.schema}}

    def to_anthropic(self) -> dict[str, Any]:
        """An entry of Anthropic's ``tools`` list."""
        return {"name": self.name, "description": self.description, "input_schema": self.schema}

    def to_prompt_line(self, *, params_word: str = "params") -> str:
        """``- name: description [params: city(string, required), days(integer, default 3)]``."""
        parts = []
        for p in self.parameters:
            notes = [p.type, "required"] if p.required else [p.type]
            if p.enum:
                notes.append("one of " + "/".join(str(e) for e in p.enum))
            if p.has_default and p.default is not None:
                notes.append(f"default {json.dumps(p.default, ensure_ascii=False)}")
            desc = f"; {p.description.strip()}" if p.description.strip() else ""
            parts.append(f"{p.name}({', '.join(notes)}{desc})")
        first_line = self.description.strip().splitlines()[0] if self.description.strip() else ""
        return f"- {self.name}: {first_line} [{params_word}: {', '.join(parts) or 'none'}]"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable description (the execute callable is left out on purpose)."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": [
                {"name": p.name, "type": p.type, "description": p.description, "required": p.required}
                | ({"enum": p.enum} if p.enum else {})
                | ({"default": p.default} if p.has_default else {})
                for p in self.parameters
            ],
            "schema": self.schema,
            "is_mcp": self.is_mcp,
            "race_group": self.race_group,
            "idempotent": self.idempotent,
        }


def _is_async(func: Callable[..., Any]) -> bool:
    while isinstance(func, functools.partial):
        func = func.func
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(type(func).__call__)


def _resolve(root: Mapping[str, Any], prop: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = prop.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, Mapping) else {}
        return {**target, **{k: v for k, v in prop.items() if k != "$ref"}}
    return prop


def _type_label(root: Mapping[str, Any], prop: Mapping[str, Any]) -> str:
    t = prop.get("type")
    if isinstance(t, str):
        if t == "array" and isinstance(prop.get("items"), Mapping):
            return f"array of {_type_label(root, _resolve(root, prop['items']))}"
        return t
    if isinstance(t, list):
        return "|".join(str(x) for x in t)
    for key in ("anyOf", "oneOf"):
        if key in prop:
            return "|".join(_type_label(root, _resolve(root, o)) for o in prop[key])
    if "enum" in prop:
        return "string"
    return "object" if "properties" in prop else "any"


@overload
def tool(func: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None, race_group: str | None = None,
    requires_approval: bool | Callable[[dict[str, Any]], str | None] = False, idempotent: bool = True,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    race_group: str | None = None,
    requires_approval: bool | Callable[[dict[str, Any]], str | None] = False,
    idempotent: bool = True,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a Tool from a plain (sync or async) function: schema from hints, text from the docstring.
    ``idempotent=False`` for one with side effects: it is then not retried after a timeout."""

    def build(fn: Callable[..., Any]) -> Tool:
        fs = function_schema(fn, name=name, description=description)

        if inspect.iscoroutinefunction(fn):
            async def execute_async(args: dict[str, Any]) -> Any:
                return await fn(**args)

            execute: Execute = execute_async
        else:
            def execute_sync(args: dict[str, Any]) -> Any:
                return fn(**args)

            execute = execute_sync

        def validator(args: dict[str, Any]) -> dict[str, Any]:
            return validate_with_model(fs.model, args, fs.name)

        built = Tool(name=fs.name, description=fs.description, schema=fs.json_schema, execute=execute,
                     race_group=race_group, validator=validator, requires_approval=requires_approval,
                     idempotent=idempotent)
        return built

    return build(func) if func is not None else build
