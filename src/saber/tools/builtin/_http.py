"""One HTTP call to a tool's backend, every failure turned into a ToolError the model can read.

Network unreachable, timeouts, 429 and 5xx are retryable (trying again later can help); other
4xx and a body that is not JSON are not. httpx is imported by the first call: the built-in tools
are registered by every process, most of which (a time query, ``saber docs``) never call out.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from saber.tools.errors import ToolError

if TYPE_CHECKING:
    import httpx

_MAX_REASON = 200


class ServiceError(ToolError):
    """A backend's HTTP error; ``status`` lets a caller add a hint for one code (403, 401...)."""

    def __init__(self, message: str, *, status: int, retryable: bool) -> None:
        super().__init__(message, retryable=retryable)
        self.status = status


def make_client(timeout: float, transport: httpx.AsyncBaseTransport | None) -> httpx.AsyncClient:
    """A short-lived client; one per call keeps tools free of event-loop-bound state."""
    import httpx

    return httpx.AsyncClient(
        timeout=httpx.Timeout(timeout),
        transport=transport,
        follow_redirects=True,
        headers={"User-Agent": "saber-agent/0.1"},
    )


async def request_json(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    service: str,
    budget: float,
    params: Mapping[str, str | int | float] | None = None,
    json_body: Any = None,
    headers: Mapping[str, str] | None = None,
) -> Any:
    """``method url`` and its decoded JSON body; a ToolError naming ``service`` on any failure.

    ``budget`` (seconds) bounds the whole exchange, on top of the client's per-read timeout,
    so a server that trickles bytes cannot hold the call longer than that.
    """
    import httpx

    try:
        async with asyncio.timeout(budget):
            response = await client.request(method, url, params=params, json=json_body, headers=headers)
    except (httpx.TimeoutException, TimeoutError):
        raise ToolError(f"the {service} could not be reached: no answer within {budget:g} s", retryable=True) from None
    except httpx.ConnectError as exc:
        raise ToolError(
            f"the {service} could not be reached: network unreachable or connection refused ({_describe(exc)})",
            retryable=True,
        ) from None
    except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:  # a setting to fix, not a failure to wait out
        raise ToolError(f"the {service} URL {url!r} is invalid: {exc}", retryable=False) from None
    except httpx.TransportError as exc:
        raise ToolError(f"the {service} could not be reached: {_describe(exc)}", retryable=True) from None
    except httpx.HTTPError as exc:  # too many redirects, a body that cannot be decoded...
        raise ToolError(f"the {service} failed: {_describe(exc)}", retryable=False) from None
    return _decode(response, service)


def _decode(response: httpx.Response, service: str) -> Any:
    status = response.status_code
    if status >= 400:
        reason = _reason(response)
        if status == 429 or status >= 500:
            raise ServiceError(
                f"the {service} could not answer right now: HTTP {status}{reason}; try again later",
                status=status, retryable=True,
            )
        raise ServiceError(f"the {service} rejected the request: HTTP {status}{reason}", status=status, retryable=False)
    try:
        return response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        kind = response.headers.get("content-type", "unknown content type")
        raise ToolError(f"the {service} answered with something that is not JSON ({kind})", retryable=False) from None


def _reason(response: httpx.Response) -> str:
    """A short reason from the error body: the ``reason``/``error``/``detail`` field, or its text."""
    text = response.text.strip()
    try:
        body = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        body = None
    if isinstance(body, dict):
        for key in ("reason", "detail", "error", "message"):
            value = body.get(key)
            if isinstance(value, dict):
                value = value.get("message") or value.get("error")
            if isinstance(value, str) and value.strip():
                text = value.strip()
                break
    if not text:
        return ""
    text = " ".join(text.split())
    return f" ({text[:_MAX_REASON]}{'…' if len(text) > _MAX_REASON else ''})"


def _describe(exc: Exception) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__
