"""Odd headers and bodies an attacker sends, over real HTTP: each is a clear 4xx, never a 500 or
another user's way in (#28, item 7)."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
from server_helpers import LiveServer

from saber.testing import FakeOpenAIServer


@pytest.mark.parametrize("value", ["9" * 5000, "²", "3¹", "99999999999999999999", "-1", "1e3", "abc"])
def test_a_last_event_id_that_is_not_a_sequence_number_is_400(serve: Callable[..., LiveServer], value: str) -> None:
    live = serve()
    r = httpx.get(live.url + "/api/tasks/x/events", headers={"Last-Event-ID": value.encode("latin-1")}, timeout=30)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == "bad_request" and "Last-Event-ID" in error["message"]
    assert len(error["message"]) < 400  # 5,000 digits are not echoed back


def test_a_task_that_does_not_exist_is_still_404_with_a_good_last_event_id(serve: Callable[..., LiveServer]) -> None:
    live = serve()
    r = httpx.get(live.url + "/api/tasks/x/events", headers={"Last-Event-ID": "9223372036854775807"}, timeout=30)
    assert r.status_code == 404, r.text


def test_two_authorization_headers_are_refused_even_when_the_second_is_a_good_key(
        serve: Callable[..., LiveServer], fake_llm: FakeOpenAIServer) -> None:
    live = serve(keys=True)
    for keys in (["Bearer wrong", "Bearer key-alice"], ["Bearer key-alice", "Bearer key-bob"]):
        headers = [("Authorization", k) for k in keys]
        for method, path in (("GET", "/api/tasks"), ("POST", "/v1/chat/completions"), ("GET", "/api/memory")):
            r = httpx.request(method, live.url + path, headers=headers, json={}, timeout=30)
            assert r.status_code == 400, r.text
            assert r.json()["error"]["message"] == "2 Authorization headers: send exactly one"
    assert httpx.get(live.url + "/api/tasks", headers={"Authorization": "Bearer key-alice"}).status_code == 200


@pytest.mark.parametrize("stream", [False, True])
def test_a_v1_body_that_is_not_utf8_is_an_openai_shaped_error(serve: Callable[..., LiveServer], stream: bool) -> None:
    live = serve()
    body = b'{"model": "saber", "stream": ' + (b"true" if stream else b"false") + b', "messages": [{"role": "user", "content": "caf\xe9"}]}'
    r = httpx.post(live.url + "/v1/chat/completions", content=body, headers={"content-type": "application/json"},
                   timeout=30)
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error == {"code": "invalid_request", "message": error["message"], "type": "invalid_request_error",
                     "param": None}
    assert "not UTF-8" in error["message"]
