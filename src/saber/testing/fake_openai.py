"""``FakeOpenAIServer``: a real HTTP server on loopback that speaks the OpenAI API, for tests.

It answers ``POST /v1/chat/completions`` (plain and streamed as SSE), ``POST /v1/embeddings`` and
``GET /v1/models`` from a script, so the real ``openai`` client code path is exercised end to end::

    with FakeOpenAIServer(["Hello!", FakeReply.fail(429, "slow down")]) as server:
        model = OpenAIChatModel("fake-model", base_url=server.base_url, api_key="k")
        ...
        server.requests[0].body["messages"]   # what the client sent
        server.assert_complete()

Replies are queued like ``ScriptedModel``'s: a string (text), a ``ToolCall`` or a list of them, a
``Completion``, a ``FakeReply`` (errors with an HTTP status, delays, stream quirks such as
parallel tool calls all at index 0) or a function of the request body returning one of those.
Embeddings are deterministic vectors derived from a hash of the text: a test fake, not a model.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import math
import re
import select
import socket
import struct
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from saber.llm.types import Completion, ToolCall, Usage


@dataclass(frozen=True, kw_only=True)
class FakeReply:
    """One scripted answer of the fake server."""

    text: str = ""
    tool_calls: Sequence[ToolCall | Mapping[str, Any]] = ()
    """``ToolCall``s, or raw ``{"id"?, "name", "arguments": str | dict}`` to send odd shapes as-is."""
    status: int = 200
    error: str = ""
    """The error message sent with a ``status`` of 400 or more."""
    delay: float = 0.0
    """Seconds before the response starts."""
    chunk_delay: float = 0.0
    """Seconds between streamed chunks."""
    token_delay: float = 0.0
    """Seconds per generated token (characters / 4, as the default usage counts), as a model decodes:
    a streamed chunk is sent once its own tokens are "generated", a plain reply once all of them
    are (after ``delay``, which stands for the time to the first token). Tool-call names and
    arguments count as generated text."""
    usage: Usage | None = None
    """Defaults to a rough count (characters / 4)."""
    finish_reason: str | None = None
    index_zero: bool = False
    """Stream every tool call at ``index`` 0, as some endpoints do for parallel calls."""
    omit_ids: bool = False
    """Send tool calls without ids."""
    stream_error: str | None = None
    """In a stream, send an ``{"error": ...}`` event after the text instead of finishing."""

    @classmethod
    def fail(cls, status: int, message: str, *, delay: float = 0.0) -> FakeReply:
        return cls(status=status, error=message, delay=delay)


@dataclass(frozen=True, kw_only=True)
class RecordedRequest:
    """One HTTP request a ``FakeOpenAIServer`` received."""

    method: str
    path: str
    headers: dict[str, str]
    """Lower-cased header names."""
    body: Any
    """The parsed JSON body (``None`` for GET or a body that was not JSON)."""


@dataclass
class _State:
    replies: list[Any] = field(default_factory=list)
    embedding_replies: list[FakeReply] = field(default_factory=list)
    requests: list[RecordedRequest] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)


class FakeOpenAIServer:
    """A real OpenAI-compatible HTTP server on loopback that answers with scripted replies (text,
    tool calls, errors, slow streams) and records every request: for testing code that talks to a
    model over HTTP. Use as a context manager (sync or async); ``base_url`` points a client at it."""

    def __init__(
        self,
        replies: Sequence[Any] = (),
        *,
        model: str = "fake-model",
        api_key: str | None = None,
        embedding_dimensions: int = 64,
        reject_params: Sequence[str] = (),
        owned_by: str = "saber-fake",
        routes: Mapping[str, Any] | None = None,
    ) -> None:
        """``api_key``: when set, requests without ``Authorization: Bearer <api_key>`` get a 401.
        ``reject_params``: top-level request fields answered with a 400, like strict endpoints
        that do not know e.g. ``stream_options`` or ``response_format``.
        ``owned_by``: what ``GET /v1/models`` says owns the model (vLLM says "vllm", llama.cpp
        "llamacpp"). ``routes``: more GET paths answered with JSON, e.g. ``{"/version": {...}}``."""
        self.owned_by = owned_by
        self.routes = dict(routes or {})
        self.model = model
        self.api_key = api_key
        self.embedding_dimensions = embedding_dimensions
        self.reject_params = tuple(reject_params)
        self._state = _State(replies=list(replies))
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.client_disconnected = threading.Event()
        """Set when a client hung up before a response was finished (e.g. a cancelled stream)."""
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        if self._httpd is not None:
            return self
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        httpd.daemon_threads = True
        httpd.fake = self  # type: ignore[attr-defined]
        self._httpd = httpd
        self._stopping.clear()
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> FakeOpenAIServer:
        return self.start()

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.stop)

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("FakeOpenAIServer is not started")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``: what to give the client as ``base_url``."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- script -------------------------------------------------------------------------------

    def queue(self, *replies: Any) -> None:
        with self._lock:
            self._state.replies.extend(replies)

    def queue_embeddings(self, *replies: FakeReply) -> None:
        """Scripted outcomes for the next embedding requests (errors, delays); without any, every
        embedding request succeeds."""
        with self._lock:
            self._state.embedding_replies.extend(replies)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._state.requests)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def assert_complete(self) -> None:
        """Fails when queued replies were never used or a request found none queued."""
        with self._lock:
            left, unanswered = list(self._state.replies), list(self._state.unanswered)
        if left:
            raise AssertionError(f"FakeOpenAIServer: {len(left)} queued replies were never used: {left!r}")
        if unanswered:
            raise AssertionError(f"FakeOpenAIServer: requests found no reply queued: {unanswered}")

    # -- request handling (runs in the server's threads) ---------------------------------------

    def _record(self, handler: _Handler, body: Any) -> int:
        headers = {k.lower(): v for k, v in handler.headers.items()}
        with self._lock:
            self._state.requests.append(RecordedRequest(method=handler.command, path=handler.path, headers=headers, body=body))
            return len(self._state.requests)

    def _authorised(self, handler: _Handler) -> bool:
        return self.api_key is None or handler.headers.get("Authorization") == f"Bearer {self.api_key}"

    def handle(self, handler: _Handler) -> None:
        path = handler.path.split("?", 1)[0].rstrip("/")
        body: Any = None
        if handler.command == "POST":
            length = int(handler.headers.get("Content-Length") or 0)
            raw = handler.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                number = self._record(handler, None)
                return self._send_error(handler, 400, f"request #{number}: body is not JSON", "invalid_request_error")
        number = self._record(handler, body)
        if not self._authorised(handler):
            return self._send_error(handler, 401, "Incorrect API key provided", "invalid_api_key")
        if handler.command == "GET" and path in self.routes:
            return self._send_json(handler, 200, self.routes[path])
        if handler.command == "GET" and path.endswith("/models"):
            data = [{"id": self.model, "object": "model", "created": 0, "owned_by": self.owned_by}]
            return self._send_json(handler, 200, {"object": "list", "data": data})
        if handler.command == "POST" and path.endswith("/chat/completions"):
            return self._chat(handler, body, number)
        if handler.command == "POST" and path.endswith("/embeddings"):
            return self._embeddings(handler, body)
        self._send_error(handler, 404, f"unknown endpoint {handler.command} {path}", "not_found")

    def _chat(self, handler: _Handler, body: Any, number: int) -> None:
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or not body.get("model"):
            return self._send_error(handler, 400, "'model' and 'messages' are required", "invalid_request_error")
        rejected = [p for p in self.reject_params if p in body]
        if rejected:
            return self._send_error(handler, 400, f"Unrecognized request argument supplied: {rejected[0]}", "invalid_request_error")
        reply = self._next_reply(body, number)
        if reply is None:
            return self._send_error(handler, 400, f"FakeOpenAIServer: no reply queued for request #{number}", "no_reply_queued")
        if not self._wait(handler, reply.delay):
            return None
        if not body.get("stream") and reply.status < 400 and not self._wait(handler, _generation_time(reply)):
            return None
        if reply.status >= 400:
            return self._send_error(handler, reply.status, reply.error or f"scripted error {reply.status}", "scripted_error")
        if body.get("stream"):
            return self._stream(handler, body, reply, number)
        return self._send_json(handler, 200, self._completion(body, reply, number))

    def _next_reply(self, body: dict[str, Any], number: int) -> FakeReply | None:
        with self._lock:
            if not self._state.replies:
                self._state.unanswered.append(f"#{number}")
                return None
            reply = self._state.replies.pop(0)
        if callable(reply) and not isinstance(reply, type):
            reply = reply(body)
        return _as_reply(reply)

    def _completion(self, body: dict[str, Any], reply: FakeReply, number: int) -> dict[str, Any]:
        calls = [_wire_call(c, i, reply.omit_ids) for i, c in enumerate(reply.tool_calls)]
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or (None if calls else "")}
        if calls:
            message["tool_calls"] = calls
        return {
            "id": f"chatcmpl-fake-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model),
            "choices": [{"index": 0, "message": message, "finish_reason": _finish(reply)}],
            "usage": _usage(body, reply),
        }

    def _stream_events(self, body: dict[str, Any], reply: FakeReply, number: int) -> Iterator[dict[str, Any]]:
        base = {"id": f"chatcmpl-fake-{number}", "object": "chat.completion.chunk", "created": int(time.time()), "model": body.get("model", self.model)}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        yield chunk({"role": "assistant", "content": ""})
        for piece in _pieces(reply.text):
            yield chunk({"content": piece})
        if reply.stream_error is not None:
            yield {"error": {"message": reply.stream_error, "type": "server_error"}}
            return
        for position, call in enumerate(reply.tool_calls):
            wire = _wire_call(call, position, reply.omit_ids)
            index = 0 if reply.index_zero else position
            header: dict[str, Any] = {"index": index, "type": "function", "function": {"name": wire["function"]["name"], "arguments": ""}}
            if "id" in wire:
                header["id"] = wire["id"]
            yield chunk({"tool_calls": [header]})
            arguments = wire["function"]["arguments"]
            fragments = _split(arguments, 3) if isinstance(arguments, str) else [arguments]
            for fragment in fragments:
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})
        yield chunk({}, _finish(reply))
        if (body.get("stream_options") or {}).get("include_usage"):
            yield {**base, "choices": [], "usage": _usage(body, reply)}

    def _stream(self, handler: _Handler, body: dict[str, Any], reply: FakeReply, number: int) -> None:
        try:
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.send_header("Cache-Control", "no-cache")
            writer = _ChunkedWriter(handler)
            # chunk_delay applies between content chunks, not after the opening role chunk.
            for position, event in enumerate(self._stream_events(body, reply, number)):
                if position > 1 and not self._wait(handler, reply.chunk_delay):
                    return
                if reply.token_delay and not self._wait(handler, reply.token_delay * _event_chars(event) / 4):
                    return
                writer.write(f"data: {json.dumps(event, ensure_ascii=False)}\n\n")
            writer.write("data: [DONE]\n\n")
            writer.close()
        except OSError:
            self.client_disconnected.set()

    def _embeddings(self, handler: _Handler, body: Any) -> None:
        with self._lock:
            scripted = self._state.embedding_replies.pop(0) if self._state.embedding_replies else None
        if scripted is not None:
            if not self._wait(handler, scripted.delay):
                return None
            if scripted.status >= 400:
                return self._send_error(handler, scripted.status, scripted.error or f"scripted error {scripted.status}", "scripted_error")
        texts = body.get("input") if isinstance(body, dict) else None
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            return self._send_error(handler, 400, "'input' must be a non-empty string or list of strings", "invalid_request_error")
        dimensions = body.get("dimensions") or self.embedding_dimensions
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for i, text in enumerate(texts):
            vector = fake_embedding(text, dimensions)
            encoded: Any = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode() if as_base64 else vector
            data.append({"object": "embedding", "index": i, "embedding": encoded})
        tokens = sum(max(1, len(t) // 4) for t in texts)
        payload = {"object": "list", "data": data, "model": body.get("model", self.model), "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
        self._send_json(handler, 200, payload)

    # -- plumbing -------------------------------------------------------------------------------

    def _wait(self, handler: _Handler, seconds: float) -> bool:
        """Wait ``seconds``; False (and ``client_disconnected`` set) if the client hangs up first,
        or False when the server stops."""
        deadline = time.monotonic() + seconds
        sock = handler.connection
        while (remaining := deadline - time.monotonic()) > 0:
            if self._stopping.is_set():
                return False
            readable, _, _ = select.select([sock], [], [], min(remaining, 0.05))
            if readable:
                try:
                    peeked = sock.recv(1, socket.MSG_PEEK)
                except OSError:
                    peeked = b""
                if not peeked:
                    self.client_disconnected.set()
                    return False
                self._stopping.wait(min(remaining, 0.05))  # pipelined bytes: nothing to do yet
        return not self._stopping.is_set()

    def _send_json(self, handler: _Handler, status: int, payload: Any) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode()
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
        except OSError:
            self.client_disconnected.set()

    def _send_error(self, handler: _Handler, status: int, message: str, code: str) -> None:
        kind = "invalid_request_error" if status < 500 else "server_error"
        self._send_json(handler, status, {"error": {"message": message, "type": kind, "code": code}})


class _ChunkedWriter:
    """HTTP/1.1 chunked transfer encoding, so a stream needs no length and the connection stays open."""

    def __init__(self, handler: BaseHTTPRequestHandler) -> None:
        self._out = handler.wfile
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()

    def write(self, text: str) -> None:
        data = text.encode()
        self._out.write(b"%x\r\n%s\r\n" % (len(data), data))
        self._out.flush()

    def close(self) -> None:
        self._out.write(b"0\r\n\r\n")
        self._out.flush()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeOpenAI/1.0"

    def do_POST(self) -> None:
        self.server.fake.handle(self)  # type: ignore[attr-defined]

    def do_GET(self) -> None:
        self.server.fake.handle(self)  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean; the requests are recorded on the server object


# -- helpers ------------------------------------------------------------------------------------


def fake_embedding(text: str, dimensions: int = 64) -> list[float]:
    """A unit vector derived from SHA-256 of ``text``: equal texts give equal vectors, nothing more."""
    values: list[float] = []
    counter = 0
    while len(values) < dimensions:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        values.extend(n / 2**31 - 1.0 for n in struct.unpack("<8I", digest))
        counter += 1
    values = values[:dimensions]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


def _as_reply(reply: Any) -> FakeReply:
    if isinstance(reply, FakeReply):
        return reply
    if isinstance(reply, str):
        return FakeReply(text=reply)
    if isinstance(reply, ToolCall):
        return FakeReply(tool_calls=[reply])
    if isinstance(reply, Completion):
        return FakeReply(text=reply.text, tool_calls=list(reply.tool_calls), usage=reply.usage, finish_reason=reply.finish_reason)
    if isinstance(reply, list | tuple) and all(isinstance(c, ToolCall | Mapping) for c in reply):
        return FakeReply(tool_calls=list(reply))
    raise TypeError(f"FakeOpenAIServer cannot reply with {type(reply).__name__}")


def _wire_call(call: ToolCall | Mapping[str, Any], position: int, omit_id: bool) -> dict[str, Any]:
    if isinstance(call, ToolCall):
        call_id: Any = call.id
        name, arguments = call.name, json.dumps(call.arguments, ensure_ascii=False)
    else:
        call_id = call.get("id", f"call_fake_{position}")
        name, arguments = call.get("name", ""), call.get("arguments", "")
    wire: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": arguments}}
    if call_id and not omit_id:
        wire["id"] = call_id
    return wire


def _finish(reply: FakeReply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


def _usage(body: dict[str, Any], reply: FakeReply) -> dict[str, int]:
    usage = reply.usage
    if usage is None:
        prompt = sum(len(str(m.get("content") or "")) for m in body.get("messages", []) if isinstance(m, dict))
        usage = Usage(prompt_tokens=max(1, prompt // 4), completion_tokens=max(1, len(reply.text) // 4))
    return usage.to_dict()


def _generation_time(reply: FakeReply) -> float:
    """Seconds a plain (not streamed) reply takes to generate at ``reply.token_delay``."""
    if not reply.token_delay:
        return 0.0
    chars = len(reply.text)
    for position, call in enumerate(reply.tool_calls):
        function = _wire_call(call, position, omit_id=True)["function"]
        arguments = function["arguments"]
        chars += len(function["name"]) + len(arguments if isinstance(arguments, str) else json.dumps(arguments))
    return reply.token_delay * chars / 4


def _event_chars(event: Mapping[str, Any]) -> int:
    """Characters of generated text in one stream event: content, tool-call names and arguments."""
    chars = 0
    for choice in event.get("choices") or ():
        delta = choice.get("delta") or {}
        chars += len(delta.get("content") or "")
        for call in delta.get("tool_calls") or ():
            function = call.get("function") or {}
            arguments = function.get("arguments") or ""
            chars += len(function.get("name") or "") + len(arguments if isinstance(arguments, str) else json.dumps(arguments))
    return chars


def _pieces(text: str) -> list[str]:
    """Word-sized pieces, whitespace attached, so that joining them gives ``text`` back. A word of
    more than 8 characters comes in pieces of 4 (the token the usage counts): a model streams
    tokens, and compact JSON (``{"id":"n1","tool":…}``) has no space to cut at."""
    pieces: list[str] = []
    for word in re.findall(r"\S+\s*|\s+", text):
        bare = len(word.rstrip())
        if bare <= 8:
            pieces.append(word)
            continue
        cuts = list(range(0, bare, 4))
        pieces += [word[i:i + 4] for i in cuts[:-1]] + [word[cuts[-1]:]]
    return pieces


def _split(text: str, parts: int) -> list[str]:
    if not text:
        return []
    size = max(1, math.ceil(len(text) / parts))
    return [text[i : i + size] for i in range(0, len(text), size)]

