"""Which failures are worth another attempt, and how long to wait before it."""

from __future__ import annotations

import random
import socket
import ssl
import sys
import urllib.error
from dataclasses import dataclass
from typing import Any

from saber.config.graph import GraphConfig
from saber.graph.placeholders import PlaceholderError
from saber.tools.base import Tool
from saber.tools.errors import ToolError


@dataclass(frozen=True, kw_only=True)
class Failure:
    """One failed attempt, classified."""

    message: str
    retryable: bool


_CONNECTION_ERRORS: tuple[type[BaseException], ...] = (ConnectionError, socket.gaierror, ssl.SSLError)
"""Errors of reaching a backend (with httpx's ``TransportError``). Other ``OSError``s (a missing file, no permission) are local
and would fail the same way again, so they are not retried."""
_CONNECTION_NAMES = {"ConnectionError", "ConnectTimeout", "ReadTimeout", "Timeout"}
"""Connection errors of client libraries that do not subclass the built-in ones (requests, aiohttp...)."""


def _httpx() -> Any:
    """httpx when some code has loaded it, else None: an exception can be one of its errors only
    then, and importing it just to ask would cost every run that never uses HTTP."""
    return sys.modules.get("httpx")


def _is_connection_error(exc: BaseException) -> bool:
    """A connection error itself, urllib's ``URLError`` wrapping one, a client library's own
    connection error, or anything caused by one (the ``__cause__``/``__context__`` chain)."""
    httpx = _httpx()
    errors = _CONNECTION_ERRORS if httpx is None else (*_CONNECTION_ERRORS, httpx.TransportError)
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, errors) or type(current).__name__ in _CONNECTION_NAMES:
            return True
        if isinstance(current, urllib.error.URLError) and not isinstance(current, urllib.error.HTTPError):
            reason = current.reason  # an exception for network failures, a string for "unknown url type" and the like
            return isinstance(reason, BaseException) and (isinstance(reason, TimeoutError) or _is_connection_error(reason))
        current = current.__cause__ or current.__context__
    return False


def seconds_text(seconds: float) -> str:
    """``0.05`` → ``"50 ms"``, ``30`` → ``"30 s"``: durations as a person reads them."""
    return f"{seconds * 1000:g} ms" if seconds < 1 else f"{seconds:g} s"


def classify(exc: BaseException, *, timeout: float | None = None) -> Failure:
    """Retryable: ``ToolError(retryable=True)``, timeouts, connection errors, HTTP 5xx/429, and any
    exception whose boolean ``retryable`` attribute says so (``saber.llm.ModelError``).
    Not retryable: bad arguments, unknown tools or agents, HTTP 4xx, local OS errors, anything
    else (a bug)."""
    if isinstance(exc, PlaceholderError):
        return Failure(message=str(exc), retryable=False)
    if isinstance(exc, ToolError):
        return Failure(message=exc.message, retryable=exc.retryable)
    if isinstance(exc, TimeoutError):
        limit = f" after {seconds_text(timeout)}" if timeout else ""
        return Failure(message=f"timed out{limit}", retryable=True)
    httpx = _httpx()
    if httpx is not None and isinstance(exc, httpx.HTTPStatusError):
        code = exc.response.status_code
        return Failure(message=f"HTTP {code} from {exc.request.url}", retryable=code >= 500 or code == 429)
    if isinstance(exc, urllib.error.HTTPError):
        return Failure(message=f"HTTP {exc.code} from {exc.url}", retryable=exc.code >= 500 or exc.code == 429)
    if _is_connection_error(exc):
        return Failure(message=f"connection error: {type(exc).__name__}: {exc}", retryable=True)
    flag = getattr(exc, "retryable", None)
    if isinstance(flag, bool):
        return Failure(message=f"{type(exc).__name__}: {exc}", retryable=flag)
    return Failure(message=f"{type(exc).__name__}: {exc}", retryable=False)


def for_side_effects(failure: Failure, exc: BaseException, tool: Tool | None) -> Failure:
    """``failure`` unless ``tool`` is not idempotent: such a tool is tried again only when it says
    so itself (``ToolError(retryable=True)``). After a timeout, a lost connection or any other
    error it may have acted (a command half run, a message sent), and a second run would act twice."""
    if not failure.retryable or tool is None or tool.idempotent:
        return failure
    if isinstance(exc, ToolError) and exc.retryable:
        return failure
    return Failure(message=f"{failure.message}; not retried: {tool.name} has side effects and may have acted",
                   retryable=False)


def backoff_seconds(attempt: int, config: GraphConfig, rng: random.Random) -> float:
    """Delay after failed attempt number ``attempt`` (1-based): the project's one exponential curve
    (``saber.outages.backoff``) from ``retry_delay``, capped at ``retry_max_delay``, less up to
    ``retry_jitter`` of it at random."""
    from saber.outages import backoff  # stamina loads only when a node is retried

    base = backoff(attempt, initial=config.retry_delay, maximum=config.retry_max_delay)
    jitter: float = base * config.retry_jitter * rng.random()
    return base - jitter
