"""What went wrong with an OpenAI-compatible endpoint, in one line a person can act on: shared by
the chat model (``openai_compat``) and the embedder (``saber.rag.openai_embedder``)."""

from __future__ import annotations

import re
import socket


def one_line(text: str, limit: int = 300) -> str:
    """``text`` with its whitespace runs made single spaces, cut to ``limit`` characters."""
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def error_message(body: object) -> str:
    """The human part of an error body: ``{"error": {"message": ...}}``, ``{"message": ...}``,
    ``{"error": "..."}`` or a plain string; "" when it has none."""
    if isinstance(body, str):
        return one_line(body)
    if not isinstance(body, dict):
        return ""
    inner = body.get("error", body)
    if isinstance(inner, dict):
        message = inner.get("message") or inner.get("msg") or inner.get("detail")
        return one_line(str(message)) if message else ""
    return one_line(inner) if isinstance(inner, str) else ""


def connection_reason(exc: BaseException) -> str:
    """The most telling cause in ``exc``'s chain: "connection refused", "cannot resolve host (...)",
    the operating system's words for another socket error, else the first message found."""
    chain: list[BaseException] = [exc]
    current = exc.__cause__ or exc.__context__
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    for cause in reversed(chain):
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cause, socket.gaierror):
            return f"cannot resolve host ({cause.strerror or cause})"
        if isinstance(cause, OSError) and cause.strerror:
            return one_line(cause.strerror.lower())
    texts = [one_line(str(e)) for e in (*chain[1:], exc) if str(e).strip()]
    if any("connection refused" in t.lower() for t in texts):
        return "connection refused"
    return texts[0] if texts else "connection failed"
