"""Auth and limits over real HTTP: every error has one shape and the right status."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import httpx
import pytest
from server_helpers import LiveServer

from saber.testing import FakeOpenAIServer

ALICE = {"Authorization": "Bearer key-alice"}


def assert_error(r: httpx.Response, status: int, code: str, *names: str, extra: frozenset[str] = frozenset()) -> None:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error", "request_id", *extra} and body["request_id"] == r.headers["x-request-id"]
    assert body["error"]["code"] == code
    for name in names:
        assert name in body["error"]["message"], body


ROUTES = [
    ("POST", "/api/chat"), ("POST", "/api/chat/stream"), ("GET", "/api/tasks"), ("GET", "/api/tasks/x"),
    ("POST", "/api/tasks/x/cancel"), ("GET", "/api/tasks/x/events"), ("GET", "/api/documents"), ("GET", "/api/memory"),
    ("DELETE", "/api/memory"), ("GET", "/api/status"), ("GET", "/api/tools"), ("GET", "/v1/models"),
    ("POST", "/v1/chat/completions"), ("POST", "/api/documents"), ("POST", "/api/tasks/x/resume"),
]


def test_every_route_but_health_needs_a_key(serve: Callable[..., LiveServer]) -> None:
    live = serve(keys=True)
    for method, path in ROUTES:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic a2V5LWFsaWNl"}):
            r = httpx.request(method, live.url + path, headers=headers, content=b"{not json")
            assert_error(r, 401, "unauthorized")
            assert r.headers["www-authenticate"] == "Bearer"
    assert httpx.get(live.url + "/healthz").json() == {"status": "ok"}
    assert httpx.get(live.url + "/readyz").json() == {"status": "ready"}
    page = httpx.get(live.url + "/")  # the web page is open: it asks for a key itself, and holds no data
    assert page.status_code == 200 and "<div id=\"app\"" in page.text
    assert httpx.get(live.url + "/static/app.js").status_code == 200


def test_no_docs_page_that_needs_a_cdn_the_schema_is_open(serve: Callable[..., LiveServer]) -> None:
    live = serve(keys=True)
    schema = httpx.get(live.url + "/openapi.json")
    assert schema.status_code == 200 and "/v1/chat/completions" in schema.json()["paths"]
    for path in ("/docs", "/redoc"):  # Swagger UI and ReDoc load their scripts from cdn.jsdelivr.net: blank offline
        assert_error(httpx.get(live.url + path), 401, "unauthorized")
        assert_error(httpx.get(live.url + path, headers=ALICE), 404, "not_found")


def test_a_key_decides_the_user(serve: Callable[..., LiveServer], fake_llm: FakeOpenAIServer) -> None:
    live = serve(keys=True)
    r = httpx.post(live.url + "/api/chat", json={"message": "hi", "user_id": "bob"}, headers=ALICE)
    assert_error(r, 403, "forbidden", "key decides the user")
    fake_llm.queue("hello alice")
    r = httpx.post(live.url + "/api/chat", json={"message": "hi", "mode": "chat"}, headers=ALICE, timeout=30)
    assert r.json()["events"][0]["data"]["user_id"] == "alice"


@pytest.mark.parametrize("where", ["body", "query"])
def test_a_user_id_with_surrounding_spaces_is_refused(serve: Callable[..., LiveServer], where: str) -> None:
    live = serve(model=False)
    with httpx.Client(base_url=live.url, timeout=60) as client:
        if where == "body":
            r = client.post("/api/chat", json={"message": "what time is it in UTC", "user_id": "  x"})
        else:
            r = client.get("/api/memory", params={"user_id": "  x"})
        assert r.status_code == 422, r.text
        assert r.json()["error"]["message"] == "user_id must not start or end with spaces: '  x'"
        assert client.get("/api/memory", params={"user_id": "x"}).json()["history"] == []


def test_malformed_json_and_wrong_types_name_the_field(serve: Callable[..., LiveServer]) -> None:
    live = serve()
    url = live.url + "/api/chat"
    assert_error(httpx.post(url, content=b'{"message": "hi"', headers={"content-type": "application/json"}), 422,
                 "invalid_request", "malformed JSON")
    assert_error(httpx.post(url, json={}), 422, "invalid_request", "message", "required")
    assert_error(httpx.post(url, json={"message": 5}), 422, "invalid_request", "message")
    assert_error(httpx.post(url, json={"message": "hi", "mode": "fast"}), 422, "invalid_request", "mode")
    assert_error(httpx.post(url, json={"message": "hi", "use_rag": "maybe"}), 422, "invalid_request", "use_rag")
    assert_error(httpx.post(url, json={"message": "hi", "surprise": 1}), 422, "invalid_request", "surprise")
    for inner in ("after", "history"):  # a queued run's own fields, never a client's
        assert_error(httpx.post(url, json={"message": "hi", inner: 1}), 422, "invalid_request", f"{inner}: Extra inputs")
    assert_error(httpx.post(url, json={"message": "hi", "selected_tools": "get_time"}), 422, "invalid_request",
                 "selected_tools: Input should be a valid list")
    assert_error(httpx.post(url, json={"message": "   "}), 422, "invalid_request", "message", "blank")
    assert_error(httpx.post(url, json={"message": "hi\u0000there"}), 422, "invalid_request", "message",
                 "NUL character", "position 2")
    assert_error(httpx.post(url, json={"message": "hi", "detach": "yes"}), 422, "invalid_request", "detach")
    assert_error(httpx.post(url, json={"message": "hi", "user_id": "a\u0000b"}), 422, "invalid_request", "user_id",
                 "NUL character")
    assert_error(httpx.post(url, json=["message"]), 422, "invalid_request")
    assert_error(httpx.post(url, content=b'{"message": "caf\xe9"}', headers={"content-type": "application/json"}), 422,
                 "invalid_request", "not UTF-8 text (byte 0xe9 at position 16)")
    assert_error(httpx.post(url, content=b"[" * 100_000, headers={"content-type": "application/json"}), 422,
                 "invalid_request", "nested too deeply")
    long_id = "t" * 5000
    gone = httpx.get(f"{live.url}/api/tasks/{long_id}")
    assert_error(gone, 404, "not_found", "(5,000 characters) not found")
    assert len(gone.json()["error"]["message"]) < 400
    assert_error(httpx.get(live.url + "/api/tasks/x/events", headers={"Last-Event-ID": "abc"}), 400, "bad_request",
                 "Last-Event-ID")
    assert_error(httpx.get(live.url + "/nope"), 404, "not_found")
    assert_error(httpx.get(url), 405, "method_not_allowed")


def test_body_and_message_limits_answer_413(serve: Callable[..., LiveServer]) -> None:
    live = serve(server={"max_body_bytes": 4096, "max_message_chars": 100})
    url = live.url + "/api/chat"
    assert_error(httpx.post(url, json={"message": "x" * 101}), 413, "too_large", "message", "100")
    assert_error(httpx.post(url, json={"message": "长" * 5000}), 413, "too_large", "4096 bytes")

    def chunks() -> object:
        yield b'{"message": "'
        for _ in range(10):
            yield b"y" * 1000
        yield b'"}'

    assert_error(httpx.post(url, content=chunks(), headers={"content-type": "application/json"}), 413, "too_large")


def test_upload_over_the_knowledge_base_limit_answers_413(serve: Callable[..., LiveServer]) -> None:
    live = serve(rag={"max_file_mb": 0.01})
    big = {"files": ("big.txt", b"word " * 4000, "text/plain")}
    files = frozenset({"files"})  # an upload's error carries each file's result
    assert_error(httpx.post(live.url + "/api/documents", files=big), 413, "too_large", "big.txt", extra=files)
    odd = {"files": ("tool.exe", b"MZ", "application/octet-stream")}
    assert_error(httpx.post(live.url + "/api/documents", files=odd), 422, "invalid_document", "unsupported file type",
                 extra=files)
    assert httpx.get(live.url + "/api/documents").json() == []


def access_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [rec.getMessage() for rec in caplog.records if rec.name == "saber.server.access"]


def test_access_log_lines(serve: Callable[..., LiveServer], caplog: pytest.LogCaptureFixture) -> None:
    live = serve(keys=True)
    with caplog.at_level(logging.INFO, logger="saber.server.access"):
        r = httpx.get(live.url + "/api/tasks/abc", headers={**ALICE, "X-Request-ID": "req-42"})
        assert r.status_code == 404 and r.headers["x-request-id"] == "req-42"
        httpx.get(live.url + "/api/tools")
        # the line is written when the server's call ends, just after the client has its response
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(access_lines(caplog)) < 2:
            time.sleep(0.02)
    lines = access_lines(caplog)
    assert any("request_id=req-42 user=alice method=GET route=/api/tasks/{task_id} status=404 duration_ms=" in line
               for line in lines), lines
    assert any("user=- method=GET route=/api/tools status=401" in line for line in lines), lines
