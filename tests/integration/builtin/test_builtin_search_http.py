"""search_web against loopback imitations of Tavily and SearXNG."""

from __future__ import annotations

import ddgs
import pytest
from builtin_fakes import FakeService, Route, Seen

from saber.tools import ToolError
from saber.tools.builtin import make_search_tool

TAVILY = "/search-api"


def tavily_body(n: int) -> dict[str, object]:
    return {"query": "q", "response_time": 0.4, "results": [
        {"title": f"Result {i} title", "url": f"https://example.org/tavily/{i}", "content": f"tavily snippet {i}",
         "score": 0.9 - i / 10} for i in range(1, n + 1)]}


def searx_body(n: int) -> dict[str, object]:
    return {"query": "q", "number_of_results": n, "results": [
        {"title": f"Searx {i}", "url": f"https://example.org/searx/{i}", "content": f"searx snippet {i}",
         "engine": "wikipedia"} for i in range(1, n + 1)]}


@pytest.fixture
def no_ddgs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any use of DuckDuckGo fails the test: these tests exercise the HTTP backends only."""
    class Forbidden:
        def __init__(self, *args: object, **kwargs: object) -> None:
            raise AssertionError("ddgs must not be used here")

    monkeypatch.setattr(ddgs, "DDGS", Forbidden)


async def test_tavily_sends_key_and_query_and_numbers_results(fake_service: FakeService) -> None:
    fake_service.routes[TAVILY] = Route(body=tavily_body(3))
    tool = make_search_tool("tavily", tavily_api_key="tvly-secret", tavily_url=fake_service.url(TAVILY), timeout=5)

    text = await tool.run({"query": "  rust   async runtimes ", "max_results": 3})

    call = fake_service.calls(TAVILY)[0]
    assert call.method == "POST"
    assert call.headers["authorization"] == "Bearer tvly-secret"
    assert call.body["query"] == "rust async runtimes" and call.body["max_results"] == 3
    lines = text.splitlines()
    assert "Tavily" in lines[0] and "rust async runtimes" in lines[0]
    for i in (1, 2, 3):
        assert f"{i}. Result {i} title" in lines
        assert any(line.strip() == f"https://example.org/tavily/{i}" for line in lines)
        assert any(line.strip() == f"tavily snippet {i}" for line in lines)


async def test_searxng_json_api(fake_service: FakeService) -> None:
    fake_service.routes["/search"] = Route(body=searx_body(8))
    tool = make_search_tool("searxng", searxng_url=fake_service.base_url + "/", timeout=5)

    text = await tool.run({"query": "量子计算", "max_results": 2})

    call = fake_service.calls("/search")[0]
    assert call.method == "GET" and call.query == {"q": "量子计算", "format": "json"}
    assert "1. Searx 1" in text and "2. Searx 2" in text and "Searx 3" not in text
    assert "https://example.org/searx/2" in text and "searx snippet 1" in text


async def test_searxng_forbidden_json_is_explained(fake_service: FakeService) -> None:
    fake_service.routes["/search"] = Route(status=403, raw=b"<html>403 Forbidden</html>")
    tool = make_search_tool("searxng", searxng_url=fake_service.base_url, timeout=5)

    with pytest.raises(ToolError) as info:
        await tool.run({"query": "x"})

    assert not info.value.retryable
    assert "HTTP 403" in info.value.message and "json" in info.value.message.lower()


async def test_tavily_bad_key_is_not_retryable(fake_service: FakeService) -> None:
    fake_service.routes[TAVILY] = Route(status=401, body={"detail": {"error": "Unauthorized: missing or invalid API key."}})
    tool = make_search_tool("tavily", tavily_api_key="bad", tavily_url=fake_service.url(TAVILY), timeout=5)

    with pytest.raises(ToolError) as info:
        await tool.run({"query": "x"})

    assert not info.value.retryable
    assert "HTTP 401" in info.value.message and "invalid API key" in info.value.message
    assert "TAVILY_API_KEY" in info.value.message


async def test_5xx_is_retryable(fake_service: FakeService) -> None:
    fake_service.routes["/search"] = Route(status=502, raw=b"Bad Gateway")
    tool = make_search_tool("searxng", searxng_url=fake_service.base_url, timeout=5)

    with pytest.raises(ToolError) as info:
        await tool.run({"query": "x"})

    assert info.value.retryable and "HTTP 502" in info.value.message


async def test_timeout_is_retryable(fake_service: FakeService) -> None:
    fake_service.routes[TAVILY] = Route(hang=True)
    tool = make_search_tool("tavily", tavily_api_key="k", tavily_url=fake_service.url(TAVILY), timeout=0.5)

    with pytest.raises(ToolError) as info:
        await tool.run({"query": "x"})

    assert info.value.retryable and "could not be reached" in info.value.message


async def test_connection_refused_is_retryable(refused_url: str) -> None:
    tool = make_search_tool("searxng", searxng_url=refused_url, timeout=5)

    with pytest.raises(ToolError) as info:
        await tool.run({"query": "x"})

    assert info.value.retryable and "unreachable" in info.value.message


@pytest.mark.usefixtures("no_ddgs")
async def test_auto_prefers_tavily_then_falls_back_to_searxng(fake_service: FakeService) -> None:
    fake_service.routes[TAVILY] = Route(status=503, body={"detail": "maintenance"})
    fake_service.routes["/search"] = Route(body=searx_body(2))
    tool = make_search_tool("auto", tavily_api_key="k", searxng_url=fake_service.base_url,
                            tavily_url=fake_service.url(TAVILY), timeout=5)

    text = await tool.run({"query": "x"})

    assert [s.path for s in fake_service.seen] == [TAVILY, "/search"]
    assert "SearXNG" in text.splitlines()[0] and "Searx 1" in text
    assert "Tavily failed" in text.splitlines()[-1] and "HTTP 503" in text.splitlines()[-1]


async def test_auto_reports_every_backend_when_none_answers(
    fake_service: FakeService, refused_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ddgs.exceptions import DDGSException

    class Offline:
        def __init__(self, *args: object, **kwargs: object) -> None:
            pass

        def text(self, query: str, **kwargs: object) -> list[dict[str, str]]:
            raise DDGSException("Connection refused (os error 111)")

    monkeypatch.setattr(ddgs, "DDGS", Offline)

    def unauthorized(seen: Seen) -> Route:
        return Route(status=401, body={"detail": {"error": "invalid API key"}})

    fake_service.routes[TAVILY] = unauthorized
    tool = make_search_tool("auto", tavily_api_key="k", searxng_url=refused_url,
                            tavily_url=fake_service.url(TAVILY), timeout=5)

    with pytest.raises(ToolError) as info:
        await tool.run({"query": "x"})

    message = info.value.message
    assert "Tavily" in message and "SearXNG" in message and "ddgs" in message
    assert "HTTP 401" in message and "web search (ddgs) could not be reached: connection refused" in message
    assert info.value.retryable, "an unreachable backend may come back"
