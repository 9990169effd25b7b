"""``search_web``: web search through a configured backend — Tavily, SearXNG or DuckDuckGo (ddgs).

``auto`` uses Tavily when a key is set, else SearXNG when a URL is set, else ddgs; the other
configured backends follow as fallbacks, so one unreachable service does not end the search.
When no backend is configured or none answers, the tool raises a ToolError saying so; it never
returns invented results.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, Field, SecretStr, ValidationError

from saber.tools.base import Tool, tool
from saber.tools.builtin._http import ServiceError, make_client, request_json
from saber.tools.errors import ToolArgumentError, ToolError

if TYPE_CHECKING:
    import httpx

SearchBackendName = Literal["auto", "tavily", "searxng", "ddgs", "none"]
DEFAULT_TAVILY_URL = "https://api.tavily.com/search"
_SNIPPET_CHARS = 300
_NOT_CONFIGURED = (
    "web search is not configured: set search.backend (SABER_SEARCH_BACKEND) to 'tavily' with "
    "SABER_SEARCH_TAVILY_API_KEY, 'searxng' with SABER_SEARCH_SEARXNG_URL, or 'ddgs' (DuckDuckGo, no key)"
)


@dataclass(frozen=True, kw_only=True, slots=True)
class SearchHit:
    title: str
    url: str
    snippet: str = ""


class SearchBackend(Protocol):
    @property
    def label(self) -> str:
        """Human name used in results and errors ("Tavily")."""
        ...

    async def search(self, query: str, max_results: int) -> list[SearchHit]: ...


# -- Tavily ---------------------------------------------------------------------------------------

class _TavilyResult(BaseModel):
    title: str = ""
    url: str
    content: str = ""


class _TavilyResponse(BaseModel):
    results: list[_TavilyResult] = []


@dataclass(frozen=True, kw_only=True, slots=True)
class TavilyBackend:
    api_key: str = field(repr=False)
    url: str = DEFAULT_TAVILY_URL
    timeout: float = 10.0
    transport: httpx.AsyncBaseTransport | None = None
    label: str = "Tavily"

    async def search(self, query: str, max_results: int) -> list[SearchHit]:
        async with make_client(self.timeout, self.transport) as client:
            try:
                body = await request_json(
                    client, "POST", self.url, service=f"search service (Tavily at {self.url})", budget=self.timeout,
                    json_body={"query": query, "max_results": max_results, "search_depth": "basic"},
                    headers={"Authorization": f"Bearer {self.api_key}"},
                )
            except ServiceError as exc:
                if exc.status in (401, 403):
                    raise ToolError(f"{exc.message}; check SABER_SEARCH_TAVILY_API_KEY", retryable=False) from None
                raise
        parsed = _validate(_TavilyResponse, body, self.label)
        return [SearchHit(title=r.title, url=r.url, snippet=r.content) for r in parsed.results]


# -- SearXNG --------------------------------------------------------------------------------------

class _SearxResult(BaseModel):
    title: str = ""
    url: str
    content: str | None = ""


class _SearxResponse(BaseModel):
    results: list[_SearxResult] = []


@dataclass(frozen=True, kw_only=True, slots=True)
class SearxngBackend:
    base_url: str
    timeout: float = 10.0
    transport: httpx.AsyncBaseTransport | None = None
    label: str = "SearXNG"

    @property
    def search_url(self) -> str:
        base = self.base_url.rstrip("/")
        return base if base.endswith("/search") else f"{base}/search"

    async def search(self, query: str, max_results: int) -> list[SearchHit]:
        async with make_client(self.timeout, self.transport) as client:
            try:
                body = await request_json(
                    client, "GET", self.search_url, service=f"search service (SearXNG at {self.base_url})",
                    budget=self.timeout, params={"q": query, "format": "json"},
                )
            except ServiceError as exc:
                if exc.status == 403:
                    raise ToolError(f"{exc.message}; the instance may not allow JSON output "
                                    "(enable 'json' under search.formats in its settings.yml)", retryable=False) from None
                raise
        parsed = _validate(_SearxResponse, body, self.label)
        return [SearchHit(title=r.title, url=r.url, snippet=r.content or "") for r in parsed.results[:max_results]]


# -- ddgs: DuckDuckGo and the other engines it asks in turn -------------------------------------

@dataclass(frozen=True, kw_only=True, slots=True)
class DdgsBackend:
    """ddgs is synchronous; it runs in a worker thread, bounded by twice the timeout overall
    (it may query several engines one wave after another)."""

    timeout: float = 10.0
    label: str = "ddgs"

    def _search_sync(self, query: str, max_results: int) -> list[dict[str, Any]]:
        from ddgs import DDGS  # imported when a search runs: loading it costs every other command
        from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

        try:
            return DDGS(timeout=max(1, round(self.timeout))).text(query, max_results=max_results)
        except RatelimitException as exc:
            raise ToolError(f"{_ddgs(exc)} is rate-limiting requests; try again later",
                            retryable=True) from None
        except TimeoutException as exc:
            raise ToolError(f"{_ddgs(exc)} could not be reached: timed out", retryable=True) from None
        except DDGSException as exc:
            if str(exc).startswith("No results found"):  # every engine answered, with nothing
                return []
            raise ToolError(f"{_ddgs(exc)} could not be reached: {_reason(exc)}",
                            retryable=True) from None
        except OSError as exc:
            raise ToolError(f"{_ddgs(exc)} could not be reached: {_reason(exc)}",
                            retryable=True) from None

    async def search(self, query: str, max_results: int) -> list[SearchHit]:
        try:
            async with asyncio.timeout(self.timeout * 2):
                rows = await asyncio.to_thread(self._search_sync, query, max_results)
        except TimeoutError:
            raise ToolError(f"web search (ddgs) could not be reached: no answer within {self.timeout * 2:g} s",
                            retryable=True) from None
        hits = []
        for row in rows:
            url = str(row.get("href") or row.get("url") or "")
            if url:
                hits.append(SearchHit(title=str(row.get("title") or ""), url=url, snippet=str(row.get("body") or "")))
        return hits[:max_results]


_URL = re.compile(r"https?://[^\s'\")\\]+")
_REASONS = (
    (re.compile(r"dns|lookup|name or service not known|nodename|getaddrinfo", re.I),
     "the host name could not be resolved (DNS; is the network up?)"),
    (re.compile(r"refused", re.I), "connection refused"),
    (re.compile(r"unreachable|no route", re.I), "network unreachable"),
    (re.compile(r"timed? ?out", re.I), "timed out"),
    (re.compile(r"certificate|ssl|tls", re.I), "TLS/certificate error"),
    (re.compile(r"connect", re.I), "connection failed"),
)


def _ddgs(exc: BaseException) -> str:
    """"web search (ddgs: https://host/path)", naming the engine ddgs was asking when the error does."""
    m = _URL.search(str(exc))
    return f"web search (ddgs: {m.group(0).rstrip('.,;:')})" if m else "web search (ddgs)"


def _reason(exc: BaseException) -> str:
    """A short reason in words instead of the library's nested ``ConnectError(...)`` repr."""
    text = " ".join(str(exc).split())
    for pattern, reason in _REASONS:
        if pattern.search(text):
            return reason
    plain = re.sub(r"\b\w+(?:Error|Exception)\b[:(]?\s*|['\"()]", "", _URL.sub("", text)).strip(" :,")
    plain = plain or type(exc).__name__
    return plain if len(plain) <= 160 else plain[:159] + "…"


# -- choosing and running -------------------------------------------------------------------------

M = TypeVar("M", bound=BaseModel)


def _validate(model: type[M], body: Any, label: str) -> M:
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"]) or "body"
        raise ToolError(f"the search service ({label}) answered in an unexpected shape: {where}: {err['msg']}") from None


def select_backends(
    backend: SearchBackendName = "auto",
    *,
    tavily_api_key: str | SecretStr | None = None,
    searxng_url: str | None = None,
    tavily_url: str = DEFAULT_TAVILY_URL,
    timeout: float = 10.0,
    transport: httpx.AsyncBaseTransport | None = None,
) -> list[SearchBackend]:
    """The backends to try, in order. Raises ValueError for a backend that lacks its setting."""
    key = tavily_api_key.get_secret_value() if isinstance(tavily_api_key, SecretStr) else tavily_api_key
    key = (key or "").strip() or None
    url = (searxng_url or "").strip() or None
    tavily = TavilyBackend(api_key=key, url=tavily_url, timeout=timeout, transport=transport) if key else None
    searxng = SearxngBackend(base_url=url, timeout=timeout, transport=transport) if url else None
    ddgs = DdgsBackend(timeout=timeout)
    if backend == "none":
        return []
    if backend == "tavily":
        if tavily is None:
            raise ValueError("search.backend is 'tavily' but no Tavily API key is set (SABER_SEARCH_TAVILY_API_KEY)")
        return [tavily]
    if backend == "searxng":
        if searxng is None:
            raise ValueError("search.backend is 'searxng' but no instance URL is set (SABER_SEARCH_SEARXNG_URL)")
        return [searxng]
    if backend == "ddgs":
        return [ddgs]
    if backend != "auto":
        raise ValueError(f"unknown search backend {backend!r}: use auto, tavily, searxng, ddgs or none")
    return [b for b in (tavily, searxng, ddgs) if b is not None]


def format_hits(query: str, hits: list[SearchHit], label: str) -> str:
    """Numbered, compact: title, URL, a trimmed snippet — the form a model reads best."""
    if not hits:
        return f'No web results for "{query}" ({label}).'
    lines = [f'Web results for "{query}" ({label}):']
    for i, hit in enumerate(hits, 1):
        snippet = " ".join(hit.snippet.split())
        if len(snippet) > _SNIPPET_CHARS:
            snippet = snippet[: _SNIPPET_CHARS - 1].rstrip() + "…"
        lines.append(f"{i}. {' '.join(hit.title.split()) or '(untitled)'}")
        lines.append(f"   {hit.url}")
        if snippet:
            lines.append(f"   {snippet}")
    return "\n".join(lines)


async def run_search(backends: list[SearchBackend], query: str, max_results: int) -> str:
    """Ask each backend in turn until one answers; a ToolError listing every failure otherwise."""
    if not backends:
        raise ToolError(_NOT_CONFIGURED, retryable=False)
    failures: list[ToolError] = []
    for backend in backends:
        try:
            hits = await backend.search(query, max_results)
        except ToolError as exc:
            failures.append(exc)
            continue
        text = format_hits(query, hits, backend.label)
        if failures:  # say so: a bad key behind a working fallback should not go unnoticed
            text += "\n(" + "; ".join(f"{b.label} failed: {e.message}" for b, e in zip(backends, failures, strict=False)) + ")"
        return text
    if len(failures) == 1:
        raise failures[0]
    detail = "; ".join(f"{b.label}: {e.message}" for b, e in zip(backends, failures, strict=True))
    raise ToolError(f"no web search backend could answer — {detail}", retryable=any(e.retryable for e in failures))


def make_search_tool(
    backend: SearchBackendName = "auto",
    *,
    tavily_api_key: str | SecretStr | None = None,
    searxng_url: str | None = None,
    tavily_url: str = DEFAULT_TAVILY_URL,
    timeout: float = 10.0,
    transport: httpx.AsyncBaseTransport | None = None,
) -> Tool:
    """The ``search_web`` tool, in race group "search" (interchangeable with the knowledge base).

    A backend named without its setting (``tavily`` without a key) still yields a tool, whose
    every call fails with a ToolError naming the missing setting.
    """
    try:
        backends = select_backends(backend, tavily_api_key=tavily_api_key, searxng_url=searxng_url,
                                   tavily_url=tavily_url, timeout=timeout, transport=transport)
        problem = None
    except ValueError as exc:
        backends, problem = [], f"web search is not usable: {exc}"

    @tool(race_group="search")
    async def search_web(query: str, max_results: Annotated[int, Field(ge=1, le=10)] = 5) -> str:
        """Search the web; returns numbered results (title, URL, snippet).

        Args:
            query: What to search for.
            max_results: How many results to return (1-10).
        """
        text = " ".join(query.split())
        if not text:
            raise ToolArgumentError("search_web: query: must not be empty", tool="search_web")
        if problem is not None:
            raise ToolError(problem, retryable=False)
        return await run_search(backends, text, max_results)

    return search_web
