"""``check_endpoint``: what a configured model endpoint can do, probed the way Saber will use it.

Each probe is one small real request with its own time limit, and never raises: a probe that
fails says why. Probes: the model list (reachable, the model's name, context length where the
server says), a plain completion, streaming (time to first token, tokens per second), native
tool calls, and the structured-output forms (``json_schema``, ``json_object``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx
from openai.types.chat import ChatCompletion

from saber.llm.base import ModelError
from saber.llm.openai_compat import OpenAIChatModel
from saber.llm.types import Message, StreamEnd, TextDelta
from saber.tools.base import Tool

_CITY_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": False}
_ASK_CITY = [Message.system("Answer with JSON only."), Message.user('Which city is the Eiffel Tower in? Reply as {"city": "..."}.')]


@dataclass(kw_only=True)
class Probe:
    ok: bool
    detail: str
    seconds: float = 0.0


@dataclass(kw_only=True)
class CheckReport:
    endpoint: str
    model: str
    probes: dict[str, Probe] = field(default_factory=dict)
    served_model: str | None = None
    context_length: int | None = None
    tokens_per_second: float | None = None

    @property
    def reachable(self) -> bool:
        return any(p.ok for p in self.probes.values())

    def uses(self) -> dict[str, str]:
        """What Saber will use with this endpoint."""
        tools = self.probes.get("tool_calls")
        schema = self.probes.get("json_schema")
        return {
            "plans": "response_format json_schema (set [llm] structured_output = true)" if schema and schema.ok
            else "JSON in the prompt, parsed and repaired (the rule planner when it is unusable)",
            "tool arguments": "native tool calls" if tools and tools.ok else "tool calls written as text, parsed",
            "answers": "streamed" if (s := self.probes.get("streaming")) and s.ok else "one completion",
        }

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["reachable"] = self.reachable
        data["uses"] = self.uses()
        return data


async def check_endpoint(model: OpenAIChatModel, *, probe_seconds: float = 30.0) -> CheckReport:
    """Probe ``model``'s endpoint; every probe is bounded by ``probe_seconds``."""
    report = CheckReport(endpoint=model.endpoint, model=model.model)
    report.probes["models"] = await _timed(probe_seconds, lambda: _models(model, report))
    report.probes["completion"] = await _timed(probe_seconds, lambda: _completion(model, report))
    if not report.probes["models"].ok and not report.probes["completion"].ok:
        return report  # unreachable or refusing: the other probes would only repeat the error
    report.probes["streaming"] = await _timed(probe_seconds, lambda: _streaming(model, report))
    report.probes["tool_calls"] = await _timed(probe_seconds, lambda: _tool_calls(model))
    report.probes["json_schema"] = await _timed(probe_seconds, lambda: _json_schema(model))
    report.probes["json_object"] = await _timed(probe_seconds, lambda: _json_object(model))
    return report


async def _timed(seconds: float, probe: Callable[[], Awaitable[str]]) -> Probe:
    start = time.perf_counter()
    try:
        async with asyncio.timeout(seconds):
            detail = await probe()
        return Probe(ok=True, detail=detail, seconds=time.perf_counter() - start)
    except TimeoutError:
        return Probe(ok=False, detail=f"no answer within {seconds:g}s", seconds=time.perf_counter() - start)
    except _Unsupported as exc:
        return Probe(ok=False, detail=str(exc), seconds=time.perf_counter() - start)
    except ModelError as exc:
        return Probe(ok=False, detail=str(exc), seconds=time.perf_counter() - start)
    except Exception as exc:  # a probe reports, never raises
        return Probe(ok=False, detail=f"{type(exc).__name__}: {exc}", seconds=time.perf_counter() - start)


class _Unsupported(Exception):
    """The endpoint answered, but not in the form probed for."""


async def _models(model: OpenAIChatModel, report: CheckReport) -> str:
    headers = {"Authorization": f"Bearer {model.client.api_key}"}
    async with httpx.AsyncClient(timeout=model.timeout) as http:
        try:
            response = await http.get(f"{model.endpoint}/models", headers=headers)
        except httpx.HTTPError as exc:
            raise ModelError(f"model endpoint {model.endpoint} unreachable: {type(exc).__name__}: {exc}") from exc
        if response.status_code >= 400:
            raise _Unsupported(f"GET /models answered {response.status_code}")
        entries = response.json().get("data") or []
        ids = [str(e.get("id")) for e in entries if isinstance(e, dict)]
        mine = next((e for e in entries if isinstance(e, dict) and e.get("id") == model.model), entries[0] if entries else {})
        report.context_length = _context_length(mine) or await _props_context(http, model.endpoint)
    listed = "listed" if model.model in ids else f"not listed (the server has: {', '.join(ids[:5]) or 'none'})"
    return f"{len(ids)} model(s); {model.model} {listed}"


def _context_length(entry: Any) -> int | None:
    """The context length a /models entry states (vLLM ``max_model_len``, llama.cpp ``meta.n_ctx_train``…)."""
    if not isinstance(entry, dict):
        return None
    for key in ("context_length", "max_model_len", "context_window", "n_ctx"):
        if isinstance(entry.get(key), int):
            return int(entry[key])
    meta = entry.get("meta")
    return _context_length({"n_ctx": meta.get("n_ctx_train")}) if isinstance(meta, dict) else None


async def _props_context(http: httpx.AsyncClient, endpoint: str) -> int | None:
    """llama.cpp's own server states its context size at ``/props``."""
    root = endpoint[: -len("/v1")] if endpoint.endswith("/v1") else endpoint
    try:
        response = await http.get(f"{root}/props")
        settings = response.json().get("default_generation_settings", {}) if response.status_code == 200 else {}
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    return n_ctx if isinstance(n_ctx, int) else None


async def _completion(model: OpenAIChatModel, report: CheckReport) -> str:
    done = await model.complete([Message.user("Reply with the single word: ok")], max_tokens=16, temperature=0)
    report.served_model = done.model
    return f"answered {_clip(done.text)!r} (finish: {done.finish_reason})"


async def _streaming(model: OpenAIChatModel, report: CheckReport) -> str:
    start = time.perf_counter()
    first: float | None = None
    pieces: list[str] = []
    tokens = 0
    async for chunk in model.stream([Message.user("Count from 1 to 40, separated by spaces.")], max_tokens=96, temperature=0):
        if isinstance(chunk, TextDelta) and chunk.content:
            first = first if first is not None else time.perf_counter()
            pieces.append(chunk.content)
        elif isinstance(chunk, StreamEnd):
            tokens = chunk.usage.completion_tokens
    if first is None:
        raise _Unsupported("the stream carried no text")
    elapsed = time.perf_counter() - first
    tokens = tokens or len(pieces)  # without a usage chunk, one chunk is about one token
    if elapsed > 0 and tokens > 1:
        report.tokens_per_second = round(tokens / elapsed, 1)
    return f"first token after {first - start:.2f}s, {tokens} tokens"


async def _tool_calls(model: OpenAIChatModel) -> str:
    async def get_time(args: dict[str, Any]) -> str:
        return str(args.get("city"))

    tool = Tool.from_json_schema("get_time", "The current time in a city.",
                                 {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}, get_time)
    done = await model.complete([Message.user("What time is it in Tokyo? Call the get_time tool.")], tools=[tool],
                                max_tokens=128, temperature=0)
    if not done.tool_calls:
        raise _Unsupported(f"no native tool call came back (text: {_clip(done.text)!r})")
    call = done.tool_calls[0]
    return f"{call.name}({json.dumps(call.arguments, ensure_ascii=False)})"


async def _json_schema(model: OpenAIChatModel) -> str:
    """Sent as-is (not through the model's structured-output fallback, which would hide a refusal)."""
    form = {"type": "json_schema", "json_schema": {"name": "city", "schema": _CITY_SCHEMA, "strict": True}}
    try:
        params: dict[str, Any] = {"model": model.model, "messages": [{"role": m.role, "content": m.content} for m in _ASK_CITY],
                                  "response_format": form, "max_tokens": 64, "temperature": 0}
        response: ChatCompletion = await model.client.chat.completions.create(**params, stream=False)
    except Exception as exc:
        raise _Unsupported(f"refused: {_clip(str(exc))}") from exc
    choices = response.choices or []
    return _fits(choices[0].message.content or "" if choices else "")


async def _json_object(model: OpenAIChatModel) -> str:
    try:
        params: dict[str, Any] = {"model": model.model, "messages": [{"role": m.role, "content": m.content} for m in _ASK_CITY],
                                  "response_format": {"type": "json_object"}, "max_tokens": 64, "temperature": 0}
        response: ChatCompletion = await model.client.chat.completions.create(**params, stream=False)
    except Exception as exc:
        raise _Unsupported(f"refused: {_clip(str(exc))}") from exc
    choices = response.choices or []
    return _fits(choices[0].message.content or "" if choices else "")


def _fits(text: str) -> str:
    try:
        value = json.loads(text)
    except ValueError:
        raise _Unsupported(f"accepted, but the answer is not JSON: {_clip(text)!r}") from None
    if not isinstance(value, dict) or not isinstance(value.get("city"), str):
        raise _Unsupported(f"accepted, but the JSON does not fit the schema: {_clip(text)!r}")
    return f"JSON that fits: {_clip(text)}"


def _clip(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
