"""Which failures are retried, and how durations read, at the edges mutation testing (mutmut, see
pyproject's ``[tool.mutmut]``) found unchecked: status codes at the 5xx and 429 boundaries, error
chains (with and without ``raise ... from``, and looping), a timeout without a limit, one second,
and a process where httpx was never imported."""

from __future__ import annotations

import sys
import urllib.error

import httpx
import pytest

from saber.graph.retry import classify, seconds_text


def test_seconds_read_as_milliseconds_below_one_second_and_as_seconds_from_one() -> None:
    assert seconds_text(0.05) == "50 ms"
    assert seconds_text(0.999) == "999 ms"
    assert seconds_text(1) == "1 s"
    assert seconds_text(1.5) == "1.5 s"


def test_a_timeout_without_a_known_limit_says_just_timed_out() -> None:
    failure = classify(TimeoutError())
    assert (failure.message, failure.retryable) == ("timed out", True)


@pytest.mark.parametrize(("code", "retryable"), [(429, True), (430, False), (499, False), (500, True), (501, True),
                                                 (404, False)])
def test_http_errors_are_retried_for_5xx_and_429_only(code: int, retryable: bool) -> None:
    request = httpx.Request("GET", "https://api.example/v1/items")
    failure = classify(httpx.HTTPStatusError("", request=request, response=httpx.Response(code, request=request)))
    assert (failure.message, failure.retryable) == (f"HTTP {code} from https://api.example/v1/items", retryable)

    error = urllib.error.HTTPError("https://api.example/v1/items", code, "status", {}, None)  # type: ignore[arg-type]
    failure = classify(error)
    assert (failure.message, failure.retryable) == (f"HTTP {code} from https://api.example/v1/items", retryable)


def test_an_error_caused_by_a_connection_error_is_retried_whether_chained_explicitly_or_not() -> None:
    explicit = RuntimeError("lookup failed")
    explicit.__cause__ = ConnectionResetError("reset")  # raise ... from ...
    implicit = RuntimeError("lookup failed")
    implicit.__context__ = ConnectionResetError("reset")  # raised while handling it
    assert classify(explicit).retryable and classify(implicit).retryable
    assert classify(explicit).message == "connection error: RuntimeError: lookup failed"


def test_an_error_chain_that_loops_back_on_itself_is_classified_and_not_walked_forever() -> None:
    first, second = ValueError("first"), KeyError("second")
    first.__context__, second.__context__ = second, first
    failure = classify(first)
    assert (failure.message, failure.retryable) == ("ValueError: first", False)


def test_connection_errors_are_recognised_when_httpx_was_never_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "httpx")
    failure = classify(ConnectionRefusedError("refused"))
    assert failure.retryable and failure.message == "connection error: ConnectionRefusedError: refused"
