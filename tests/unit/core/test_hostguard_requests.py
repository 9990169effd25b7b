"""The Host/Origin guard as a browser's requests meet it: DNS rebinding and cross-site writes are
refused with a message that says why, and every request a real client sends gets through.

The guard is pure ASGI, so each test hands it one request (the headers a browser, curl or a
rebinding page would send) and looks at what the client would receive."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from saber.server.hostguard import AllowedHosts, HostOriginGuard, is_loopback, split_host


class Reply:
    def __init__(self, status: int, body: dict[str, Any] | None, reached: bool) -> None:
        self.status, self.body, self.reached = status, body, reached

    @property
    def code(self) -> str | None:
        return (self.body or {}).get("error", {}).get("code")

    @property
    def message(self) -> str:
        return str((self.body or {}).get("error", {}).get("message", ""))


def request(method: str = "POST", headers: list[tuple[str, str]] | None = None, *, path: str = "/tasks",
            hosts: AllowedHosts | None = None, server: tuple[str, int] | None = ("127.0.0.1", 8000),
            kind: str = "http", state: bool = True) -> Reply:
    reached: list[bool] = []

    async def app(app_scope: Any, app_receive: Any, app_send: Any) -> None:
        assert app_scope is scope and app_receive is receive and app_send is send  # the request, untouched
        reached.append(True)
        if kind == "http":
            await receive()
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"{}"})

    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope: dict[str, Any] = {"type": kind, "method": method, "path": path,
                             "headers": [(k.lower().encode(), v.encode("latin-1")) for k, v in headers or []]}
    if state:
        scope["state"] = {"request_id": "r1"}
    if server is not None:
        scope["server"] = server
    guard = HostOriginGuard(app, hosts=hosts or AllowedHosts([]))
    asyncio.run(guard(scope, receive, send))
    status = next((m["status"] for m in sent if m["type"] == "http.response.start"), 0)
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return Reply(status, json.loads(body) if body and not reached else None, bool(reached))


def test_a_page_on_another_name_resolved_to_loopback_is_refused_dns_rebinding() -> None:
    reply = request("GET", [("Host", "evil.example:8000")])
    assert reply.status == 403 and not reply.reached and reply.code == "host_not_allowed"
    assert "'evil.example'" in reply.message and "DNS rebinding" in reply.message
    assert "server.allowed_hosts" in reply.message and reply.body and reply.body["request_id"] == "r1"


def test_the_refusal_on_the_openai_endpoint_has_openai_s_error_shape() -> None:
    reply = request("POST", [("Host", "evil.example")], path="/v1/chat/completions")
    assert reply.status == 403 and reply.body and reply.body["error"]["type"] == "invalid_request_error"
    assert "type" not in (request("POST", [("Host", "evil.example")]).body or {})["error"]


def test_a_refusal_before_the_request_got_an_id_still_answers() -> None:
    reply = request("GET", [("Host", "evil.example")], state=False)
    assert reply.status == 403 and reply.body and reply.body["request_id"] == ""


@pytest.mark.parametrize("host", ["localhost:8000", "LOCALHOST", "127.0.0.1:8000", "127.1.2.3", "[::1]:8000",
                                  "localhost.", "ip6-localhost"])
def test_loopback_names_and_addresses_are_served(host: str) -> None:
    reply = request("GET", [("Host", host)])
    assert reply.status == 200 and reply.reached


def test_the_address_a_connection_arrived_at_is_served_and_a_neighbour_is_not() -> None:
    assert request("GET", [("Host", "10.0.0.5:8000")], server=("10.0.0.5", 8000)).reached
    refused = request("GET", [("Host", "10.0.0.6:8000")], server=("10.0.0.5", 8000))
    assert refused.status == 403 and refused.code == "host_not_allowed"
    assert request("GET", [("Host", "10.0.0.6")], server=None).status == 403
    assert request("GET", [("Host", "[fe80::a]:8000")], server=("fe80::a", 8000)).reached
    assert request("GET", [("Host", "[FE80::A]:8000")], server=("fe80::a", 8000)).reached


def test_configured_hosts_and_subdomains_are_served_and_look_alikes_are_not() -> None:
    hosts = AllowedHosts(["saber.example.com", ".corp.example", " ", "Upper.Example."])
    for ok in ("saber.example.com", "corp.example", "ai.corp.example", "upper.example"):
        assert request("GET", [("Host", ok)], hosts=hosts).reached, ok
    for bad in ("evilcorp.example", "saber.example.com.evil", "example.com", "corp.example.evil"):
        assert request("GET", [("Host", bad)], hosts=hosts).status == 403, bad
    assert request("GET", [("Host", "anything.example")], hosts=AllowedHosts(["*"])).reached


def test_a_malformed_or_repeated_host_header_is_refused_by_name() -> None:
    reply = request("GET", [("Host", "a:1:2")])
    assert reply.status == 403 and reply.code == "host_not_allowed" and reply.message == "Host 'a:1:2' is not a host name"
    two = request("GET", [("Host", "localhost"), ("Host", "evil.example")])
    assert two.status == 403 and two.code == "host_not_allowed" and two.message == "2 Host headers: send one"
    assert split_host("[::1]:80]") is None and split_host("[::1]]") is None  # one bracketed address, then a port


def test_a_request_without_host_and_non_http_traffic_pass_through() -> None:
    assert request("POST", []).reached  # HTTP/1.0 clients send no Host
    assert request("GET", [("Host", "evil.example")], kind="lifespan").reached


@pytest.mark.parametrize("method", ["GET", "HEAD", "OPTIONS"])
def test_reading_is_allowed_from_any_site(method: str) -> None:
    reply = request(method, [("Host", "localhost:8000"), ("Origin", "https://evil.example"),
                             ("Sec-Fetch-Site", "cross-site")])
    assert reply.reached


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_a_cross_site_write_from_a_browser_is_refused(method: str) -> None:
    reply = request(method, [("Host", "localhost:8000"), ("Origin", "https://evil.example"),
                             ("Sec-Fetch-Site", "cross-site")])
    assert reply.status == 403 and not reply.reached and reply.code == "cross_site"
    assert reply.message == ("Sec-Fetch-Site: cross-site (Origin 'https://evil.example'): a request from another "
                             "site's page may not change anything here")


def test_a_same_site_page_without_origin_is_refused_and_one_with_this_origin_is_served() -> None:
    refused = request("POST", [("Host", "localhost:8000"), ("Sec-Fetch-Site", " Same-Site ")])
    assert refused.status == 403 and refused.message.startswith("Sec-Fetch-Site: same-site: ")
    assert request("POST", [("Host", "localhost:8000"), ("Sec-Fetch-Site", "same-site"),
                            ("Origin", "http://localhost:8000")]).reached


def test_a_write_from_another_origin_is_refused_even_without_sec_fetch_site() -> None:
    reply = request("POST", [("Host", "localhost:8000"), ("Origin", "http://localhost:8001")])
    assert reply.status == 403 and reply.code == "cross_site"
    assert "Origin 'http://localhost:8001' is another site" in reply.message and "server.allowed_hosts" in reply.message


@pytest.mark.parametrize(("host", "origin"), [
    ("localhost:8000", "http://localhost:8000"), ("localhost", "http://localhost:80"),
    ("localhost:80", "http://localhost"), ("localhost:443", "https://localhost"),
    ("LocalHost:8000", "http://localhost.:8000"), ("[::1]:8000", "http://[::1]:8000"),
])
def test_the_server_s_own_page_may_write(host: str, origin: str) -> None:
    assert request("POST", [("Host", host), ("Origin", origin), ("Sec-Fetch-Site", "same-origin")]).reached


@pytest.mark.parametrize(("host", "origin"), [
    ("localhost:8000", "http://localhost"), ("localhost:80", "https://localhost"), ("localhost:443", "http://localhost"),
    ("localhost:8000", "null"), ("localhost:8000", "ftp://localhost:8000"), ("localhost:8000", "http://localhost:99999"),
    ("localhost:8000", "http://127.0.0.1:8000"), ("localhost:8000", "http://:8000"),
])
def test_an_origin_that_differs_in_scheme_port_or_name_may_not_write(host: str, origin: str) -> None:
    reply = request("POST", [("Host", host), ("Origin", origin)])
    assert reply.status == 403 and reply.code == "cross_site", origin


def test_two_origin_headers_are_refused_even_when_both_are_this_server() -> None:
    same = "http://localhost:8000"
    assert request("POST", [("Host", "localhost:8000"), ("Origin", same), ("Origin", same)]).status == 403


def test_a_write_without_host_but_with_an_origin_is_refused() -> None:
    assert request("POST", [("Origin", "http://localhost:8000")]).status == 403


def test_a_page_under_a_configured_name_may_write_to_a_server_reached_by_another() -> None:
    hosts = AllowedHosts([".corp.example"])
    assert request("POST", [("Host", "localhost:8000"), ("Origin", "https://ui.corp.example")], hosts=hosts).reached
    assert request("POST", [("Host", "localhost:8000"), ("Origin", "https://evilcorp.example")],
                   hosts=hosts).status == 403


@pytest.mark.parametrize("site", ["same-origin", "none", ""])
def test_clients_that_are_not_browsers_and_user_typed_requests_pass(site: str) -> None:
    headers = [("Host", "localhost:8000")] + ([("Sec-Fetch-Site", site)] if site else [])
    assert request("POST", headers).reached


def test_loopback_is_recognised_by_name_and_address_only() -> None:
    assert is_loopback("localhost") and is_loopback("::1") and is_loopback("127.0.0.2")
    assert not is_loopback("localhost.evil") and not is_loopback("10.0.0.1") and not is_loopback("not an ip")


def test_the_bound_address_is_compared_without_brackets_or_case() -> None:
    assert AllowedHosts([], bound="[FE80::1]").allows("fe80::1", None)
    assert not AllowedHosts([], bound=" ").allows("fe80::1", None)
    assert AllowedHosts([], bound="XBox.lan").allows("xbox.lan", None)


@given(st.from_regex(r"[a-z][a-z0-9-]{0,10}(\.[a-z][a-z0-9-]{0,10}){0,2}", fullmatch=True),
       st.none() | st.integers(min_value=0, max_value=99999))
def test_a_host_header_round_trips_through_split_host(name: str, port: int | None) -> None:
    text = name if port is None else f"{name}:{port}"
    assert split_host(text) == (name, port)
    assert split_host(text.upper() + " ") == (name, port)


@given(st.text(alphabet="/\\@ ?#", min_size=1, max_size=3), st.text(alphabet="abc", min_size=1, max_size=3))
def test_a_host_with_a_url_s_punctuation_is_no_host(bad: str, name: str) -> None:
    assert split_host(f"{name}{bad}{name}") is None
    assert split_host(f"{name}:123456") is None and split_host(f"{name}:-1") is None
