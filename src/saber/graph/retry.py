"""Which failures are worth another attempt, and how long to wait before it."""

from __future__ import annotations

import random
import socket
from dataclasses import dataclass

import httpx

from saber.graph.config import GraphConfig
from saber.tools.errors import ToolError


@dataclass(frozen=True, kw_only=True)
class Failure:
    """One failed attempt, classified."""

    message: str
    retryable: bool


_CONNECTION_ERRORS = (ConnectionError, socket.gaierror, httpx.TransportError)
"""Errors of reaching a backend. Other ``OSError``s (a missing file, no permission) are local
and would fail the same way again, so they are not retried."""


def classify(exc: BaseException, *, timeout_ms: float | None = None) -> Failure:
    """Retryable: ``ToolError(retryable=True)``, timeouts, connection errors, HTTP 5xx/429, and any
    exception whose boolean ``retryable`` attribute says so (``saber.llm.ModelError``).
    Not retryable: bad arguments, unknown tools or agents, HTTP 4xx, local OS errors, anything
    else (a bug)."""
    if isinstance(exc, LookupError) and type(exc).__name__ == "PlaceholderError":
        return Failure(message=str(exc), retryable=False)
    if isinstance(exc, ToolError):
        return Failure(message=exc.message, retryable=exc.retryable)
    if isinstance(exc, TimeoutError):
        limit = f" after {timeout_ms:g} ms" if timeout_ms is not None else ""
        return Failure(message=f"timed out{limit}", retryable=True)
    if isinstance(exc, httpx.HTTPStatusError):
        code = exc.response.status_code
        return Failure(message=f"HTTP {code} from {exc.request.url}", retryable=code >= 500 or code == 429)
    if isinstance(exc, _CONNECTION_ERRORS):
        return Failure(message=f"connection error: {type(exc).__name__}: {exc}", retryable=True)
    flag = getattr(exc, "retryable", None)
    if isinstance(flag, bool):
        return Failure(message=f"{type(exc).__name__}: {exc}", retryable=flag)
    return Failure(message=f"{type(exc).__name__}: {exc}", retryable=False)


def backoff_seconds(attempt: int, config: GraphConfig, rng: random.Random) -> float:
    """Delay after failed attempt number ``attempt`` (1-based): exponential, capped, with jitter."""
    base = min(config.retry_delay_ms * 2.0 ** (attempt - 1), config.retry_max_delay_ms)
    jitter: float = base * config.retry_jitter * rng.random()
    return (base - jitter) / 1000.0
