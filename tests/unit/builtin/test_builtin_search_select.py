"""search_web: backend selection, the unconfigured case, ddgs failures, result formatting."""

from __future__ import annotations

from typing import Any

import ddgs
import httpx
import pytest
from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException
from pydantic import SecretStr

from saber.config import Settings
from saber.tools import ToolArgumentError, ToolError
from saber.tools.builtin import builtin_tools, make_search_tool
from saber.tools.builtin.search import (
    DdgsBackend,
    SearchHit,
    SearxngBackend,
    TavilyBackend,
    format_hits,
    select_backends,
)


def fake_ddgs(monkeypatch: pytest.MonkeyPatch, *, rows: list[dict[str, str]] | None = None,
              error: Exception | None = None) -> list[dict[str, Any]]:
    """Replace the DDGS class (the backend imports it from ``ddgs`` when it searches); returns the list of recorded calls."""
    calls: list[dict[str, Any]] = []

    class FakeDDGS:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            calls.append({"init": kwargs})

        def text(self, query: str, **kwargs: Any) -> list[dict[str, str]]:
            calls.append({"query": query, **kwargs})
            if error is not None:
                raise error
            return rows or []

    monkeypatch.setattr(ddgs, "DDGS", FakeDDGS)
    return calls


def kinds(backends: list[Any]) -> list[type]:
    return [type(b) for b in backends]


def test_auto_order_follows_what_is_configured() -> None:
    assert kinds(select_backends("auto")) == [DdgsBackend]
    assert kinds(select_backends("auto", searxng_url="http://searx.local")) == [SearxngBackend, DdgsBackend]
    assert kinds(select_backends("auto", tavily_api_key="k", searxng_url="http://s")) == [
        TavilyBackend, SearxngBackend, DdgsBackend]
    assert kinds(select_backends("auto", tavily_api_key=SecretStr("k"))) == [TavilyBackend, DdgsBackend]
    assert kinds(select_backends("auto", tavily_api_key="  ", searxng_url="")) == [DdgsBackend]


def test_explicit_backend_is_used_alone() -> None:
    assert kinds(select_backends("tavily", tavily_api_key="k", searxng_url="http://s")) == [TavilyBackend]
    assert kinds(select_backends("searxng", tavily_api_key="k", searxng_url="http://s")) == [SearxngBackend]
    assert kinds(select_backends("ddgs", tavily_api_key="k")) == [DdgsBackend]
    assert select_backends("none", tavily_api_key="k") == []


def test_explicit_backend_without_its_setting_is_named() -> None:
    with pytest.raises(ValueError, match="TAVILY_API_KEY"):
        select_backends("tavily")
    with pytest.raises(ValueError, match="SEARXNG_URL"):
        select_backends("searxng")


def test_tavily_key_is_not_in_the_repr() -> None:
    assert "sekrit" not in repr(select_backends("tavily", tavily_api_key="sekrit"))


async def test_none_gives_a_clear_not_configured_error() -> None:
    with pytest.raises(ToolError) as info:
        await make_search_tool("none").run({"query": "anything"})
    assert not info.value.retryable
    assert "not configured" in info.value.message and "SABER_SEARCH_BACKEND" in info.value.message


async def test_tavily_without_key_fails_on_use_naming_the_setting() -> None:
    tool = make_search_tool("tavily")
    with pytest.raises(ToolError, match="SABER_SEARCH_TAVILY_API_KEY") as info:
        await tool.run({"query": "anything"})
    assert not info.value.retryable


async def test_ddgs_results_and_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = fake_ddgs(monkeypatch, rows=[
        {"title": "Python", "href": "https://python.org", "body": "The official home"},
        {"title": "PyPI", "href": "https://pypi.org", "body": "Package index"},
    ])
    text = await make_search_tool("ddgs", timeout=7).run({"query": "python", "max_results": "2"})

    assert calls[0] == {"init": {"timeout": 7}}
    assert calls[1]["query"] == "python" and calls[1]["max_results"] == 2
    assert "(ddgs)" in text and "1. Python" in text and "https://pypi.org" in text and "Package index" in text


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (RatelimitException("202 Ratelimit"), "rate-limiting"),
        (TimeoutException("https://duckduckgo.com timed out"), "timed out"),
        (DDGSException("ConnectError: Connection refused"), "could not be reached"),
        (OSError("Network is unreachable"), "could not be reached"),
    ],
)
async def test_ddgs_failures_become_retryable_tool_errors(
    monkeypatch: pytest.MonkeyPatch, error: Exception, words: str
) -> None:
    fake_ddgs(monkeypatch, error=error)
    with pytest.raises(ToolError) as info:
        await make_search_tool("ddgs").run({"query": "python"})
    assert info.value.retryable
    assert words in info.value.message and "web search (ddgs" in info.value.message


async def test_ddgs_with_no_results_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_ddgs(monkeypatch, error=DDGSException("No results found."))
    text = await make_search_tool("ddgs").run({"query": "zzqqxx"})
    assert text.startswith('No web results for "zzqqxx"')


async def test_auto_falls_back_from_a_failing_tavily_to_ddgs(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_ddgs(monkeypatch, rows=[{"title": "Fallback", "href": "https://ddg.example", "body": "b"}])

    def tavily(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503, json={"detail": "down"})

    tool = make_search_tool("auto", tavily_api_key="k", transport=httpx.MockTransport(tavily))
    text = await tool.run({"query": "q"})
    assert "(ddgs)" in text.splitlines()[0] and "Fallback" in text


@pytest.mark.parametrize("args", [{"query": ""}, {"query": "   "}, {}, {"query": "x", "max_results": 0},
                                  {"query": "x", "max_results": 11}])
async def test_bad_arguments_are_argument_errors(args: dict[str, Any]) -> None:
    with pytest.raises(ToolArgumentError):
        await make_search_tool("none").run(args)


def test_tool_card() -> None:
    tool = make_search_tool("none")
    assert tool.name == "search_web" and tool.race_group == "search"
    assert tool.schema["required"] == ["query"]
    assert tool.schema["properties"]["max_results"]["default"] == 5


def test_format_is_numbered_compact_and_trims_long_snippets() -> None:
    long = "word " * 200
    text = format_hits("q", [SearchHit(title="A\n title", url="https://a", snippet=long),
                             SearchHit(title="", url="https://b")], "X")
    lines = text.splitlines()
    assert lines == [
        'Web results for "q" (X):', "1. A title", "   https://a", lines[3], "2. (untitled)", "   https://b"]
    assert lines[3].startswith("   word word") and lines[3].endswith("…") and len(lines[3]) < 320


def test_builtin_tools_from_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("SABER_HOME", str(tmp_path))
    settings = Settings(search={"backend": "searxng", "searxng_url": "http://searx.local"},
                        tools={"default_timezone": "Asia/Tokyo", "timeout": 3.0})
    tools = {t.name: t for t in builtin_tools(settings)}
    assert set(tools) == {"get_time", "convert_time", "get_weather", "search_web"}
    assert tools["search_web"].race_group == "search"
    assert tools["get_time"].schema["properties"]["timezone"]["default"] == "Asia/Tokyo"
    assert tools["get_weather"].schema["required"] == ["city"]


async def test_ddgs_that_hangs_is_cut_off_as_retryable(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    release = threading.Event()

    class Hanging:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

        def text(self, query: str, **kwargs: Any) -> list[dict[str, str]]:
            release.wait()
            return []

    monkeypatch.setattr(ddgs, "DDGS", Hanging)
    try:
        with pytest.raises(ToolError) as info:
            await make_search_tool("ddgs", timeout=0.2).run({"query": "q"})
    finally:
        release.set()
    assert info.value.retryable and "could not be reached" in info.value.message


async def test_ddgs_error_names_the_backend_and_url_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = ("ConnectError: ConnectError('error sending request for url (https://html.duckduckgo.com/html): "
           "client error (Connect): dns error: failed to lookup address information: Name or service not known')")
    fake_ddgs(monkeypatch, error=DDGSException(raw))
    with pytest.raises(ToolError) as caught:
        await make_search_tool("ddgs").run({"query": "python"})
    message = str(caught.value)
    assert message == ("web search (ddgs: https://html.duckduckgo.com/html) could not be reached: "
                       "the host name could not be resolved (DNS; is the network up?)")
    assert "ConnectError(" not in message and "\n" not in message
