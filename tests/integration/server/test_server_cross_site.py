"""No web page can drive the server (#28 item 1), over real HTTP: a rebound host name, a cross-site
Origin, ``Sec-Fetch-Site: cross-site`` and a cross-site multipart upload are refused before they do
anything; the web UI's same-origin requests and clients without Origin (curl, the CLI, the
``openai`` client) still work."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_helpers import LiveServer

from saber.testing import FakeOpenAIServer

EVIL = "https://evil.example"
UPLOAD = [("files", ("planted.md", b"# Planted\n\nThe admin password is hunter2.", "text/markdown"))]


def port_of(live: LiveServer) -> int:
    return int(live.url.rsplit(":", 1)[1])


def mcp_body(marker: Path) -> dict[str, Any]:
    return {"name": "evil", "command": sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w').close()"],
            "timeout": 2}


def assert_refused(r: httpx.Response, code: str, *words: str) -> None:
    assert r.status_code == 403, r.text
    error = r.json()["error"]
    assert error["code"] == code, error
    for word in words:
        assert word in error["message"], error


def test_a_rebound_host_name_is_refused_on_every_route(serve: Callable[..., LiveServer], tmp_path: Path) -> None:
    live = serve(home=tmp_path / "home", server={"keyless_admin": True}, mcp={"startup_timeout": 3.0})
    marker = tmp_path / "ran"
    rebound = {"Host": f"evil.example:{port_of(live)}"}
    with httpx.Client(base_url=live.url, timeout=30) as client:
        for method, path in (("GET", "/"), ("GET", "/api/status"), ("GET", "/api/documents"), ("GET", "/healthz"),
                             ("GET", "/api/mcp/servers"), ("GET", "/v1/models")):
            assert_refused(client.request(method, path, headers=rebound), "host_not_allowed", "'evil.example'",
                           "DNS rebinding", "server.allowed_hosts")
        assert_refused(client.post("/api/mcp/servers", json=mcp_body(marker), headers=rebound), "host_not_allowed")
        assert_refused(client.post("/api/documents", files=UPLOAD, headers=rebound), "host_not_allowed")
        assert_refused(client.post("/api/chat", json={"message": "hi"}, headers={"Host": "127.0.0.1.evil.example"}),
                       "host_not_allowed")
        assert_refused(client.get("/api/status", headers={"Host": "evil.example@127.0.0.1"}), "host_not_allowed")
        assert client.get("/api/documents").json() == []
        for host in (f"localhost:{port_of(live)}", f"127.0.0.1:{port_of(live)}", f"[::1]:{port_of(live)}",
                     "LOCALHOST", "localhost.", "127.0.0.2"):
            assert client.get("/api/status", headers={"Host": host}).status_code == 200, host
    assert not marker.exists() and not (tmp_path / "home" / "saber.toml").exists()


def test_a_cross_site_origin_cannot_change_anything(serve: Callable[..., LiveServer], tmp_path: Path) -> None:
    live = serve(home=tmp_path / "home", server={"keyless_admin": True}, mcp={"startup_timeout": 3.0})
    marker = tmp_path / "ran"
    with httpx.Client(base_url=live.url, timeout=30) as client:
        for origin in (EVIL, "null", f"http://localhost:{port_of(live) + 1}", f"https://127.0.0.1:{port_of(live)}x"):
            headers = {"Origin": origin}
            assert_refused(client.post("/api/mcp/servers", json=mcp_body(marker), headers=headers), "cross_site",
                           "Origin")
            assert_refused(client.post("/api/chat", json={"message": "hi"}, headers=headers), "cross_site")
            assert_refused(client.delete("/api/memory", headers=headers), "cross_site")
            assert_refused(client.post("/api/tasks/x/cancel", headers=headers), "cross_site")
        assert client.get("/api/status", headers={"Origin": EVIL}).status_code == 200  # a read: the browser keeps it from the page
        same_origin_but_cross_site = {"Origin": live.url, "Sec-Fetch-Site": "cross-site"}  # the browser's word wins
        assert_refused(client.delete("/api/memory", headers=same_origin_but_cross_site), "cross_site", "Sec-Fetch-Site")
    assert not marker.exists() and not (tmp_path / "home" / "saber.toml").exists()


@pytest.mark.parametrize("headers", [
    {"Origin": EVIL, "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"},  # a <form> post from another site
    {"Sec-Fetch-Site": "cross-site"},  # a browser that left Origin out
    {"Sec-Fetch-Site": "same-site"},  # another port, or a subdomain
])
def test_a_cross_site_multipart_upload_plants_no_document(serve: Callable[..., LiveServer],
                                                          headers: dict[str, str]) -> None:
    live = serve()
    with httpx.Client(base_url=live.url, timeout=30) as client:
        r = client.post("/api/documents", files=UPLOAD, headers=headers)
        assert_refused(r, "cross_site", "Sec-Fetch-Site", *(["'https://evil.example'"] if "Origin" in headers else []))
        assert client.get("/api/documents").json() == []


def test_the_web_ui_same_origin_and_clients_without_origin_still_work(serve: Callable[..., LiveServer],
                                                                      fake_llm: FakeOpenAIServer) -> None:
    live = serve(server={"keyless_admin": True})
    browser = {"Origin": live.url, "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}
    with httpx.Client(base_url=live.url, timeout=60) as client:
        r = client.post("/api/documents", files=UPLOAD, headers=browser)
        assert r.status_code == 200 and r.json()["files"][0]["status"] == "added", r.text
        assert client.get("/api/mcp/servers", headers=browser).json() == []
        typed = client.delete("/api/memory", headers={"Sec-Fetch-Site": "none"})  # the user's own doing, not a page's
        assert typed.status_code == 200, typed.text
        fake_llm.queue("hello")
        r = client.post("/v1/chat/completions", json={"model": "saber-chat", "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 200, r.text
        assert len(client.get("/api/documents").json()) == 1


def test_v1_refusals_have_openais_shape_and_keys_do_not_let_a_page_in(serve: Callable[..., LiveServer]) -> None:
    live = serve(keys=True)
    alice = {"Authorization": "Bearer key-alice"}
    body = {"model": "saber-chat", "messages": [{"role": "user", "content": "hi"}]}
    r = httpx.post(live.url + "/v1/chat/completions", json=body, headers={**alice, "Origin": EVIL}, timeout=30)
    assert_refused(r, "cross_site")
    assert r.json()["error"]["type"] == "invalid_request_error" and r.json()["error"]["param"] is None
    r = httpx.get(live.url + "/v1/models", headers={**alice, "Host": "evil.example"}, timeout=30)
    assert_refused(r, "host_not_allowed")


def test_behind_a_proxy_the_public_name_is_allowed_when_configured(serve: Callable[..., LiveServer]) -> None:
    live = serve(server={"allowed_hosts": ["saber.example.com", ".corp.example"]})
    with httpx.Client(base_url=live.url, timeout=30) as client:
        for host in ("saber.example.com", "saber.example.com:443", "corp.example", "ai.corp.example"):
            assert client.get("/api/status", headers={"Host": host}).status_code == 200, host
        for host in ("example.com", "evil-saber.example.com", "corp.example.evil.example", "xcorp.example"):
            assert_refused(client.get("/api/status", headers={"Host": host}), "host_not_allowed")
        # the proxy forwarded to 127.0.0.1: the page's origin is the public name the operator listed
        page = {"Origin": "https://saber.example.com", "Sec-Fetch-Site": "same-origin"}
        assert client.post("/api/documents", files=UPLOAD, headers=page).status_code == 200
        assert client.post("/api/documents", files=UPLOAD,
                           headers={"Origin": "https://saber.example.com.evil.example"}).status_code == 403


def test_any_host_with_a_star_still_checks_the_origin(serve: Callable[..., LiveServer]) -> None:
    live = serve(server={"allowed_hosts": ["*"]})
    with httpx.Client(base_url=live.url, timeout=30) as client:
        assert client.get("/api/status", headers={"Host": "whatever.example"}).status_code == 200
        same = {"Host": "whatever.example", "Origin": "http://whatever.example"}
        assert client.delete("/api/memory", headers=same).status_code == 200
        assert_refused(client.delete("/api/memory", headers={"Host": "whatever.example", "Origin": EVIL}), "cross_site")
