"""API keys as a caller and an operator meet them: a wrong, missing or doubled key is refused
before anything runs, a key decides its user, and a keys file or setting that holds anything but
key hashes is refused with the place it came from."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from fastapi import Request

from saber.config import ConfigError, Settings
from saber.server.auth import LOCAL_USER, KeyGate, KeyRing, caller, hash_key, new_key, read_keys_file
from saber.server.errors import ApiError

ALICE, BOB = "sk-alice-key", "sk-bob-key"
RING = KeyRing({hash_key(ALICE): "alice", hash_key(BOB).upper().replace("SHA256:", "sha256:"): "bob"})


def gate(headers: list[tuple[str, str]], *, path: str = "/tasks", keys: KeyRing = RING,
         kind: str = "http", state: bool = True) -> tuple[int, dict[str, Any], dict[str, str], dict[str, Any]]:
    """Status, JSON body (empty when the app answered), response headers, and the request state the app saw."""
    seen: dict[str, Any] = {}

    async def app(app_scope: Any, app_receive: Any, app_send: Any) -> None:
        assert app_scope is scope and app_receive is receive and app_send is send  # the request, untouched
        seen.update(scope.get("state", {}), reached=True)
        if kind == "http":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b""})

    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope: dict[str, Any] = {"type": kind, "method": "POST", "path": path,
                             "headers": [(k.lower().encode(), v.encode("latin-1")) for k, v in headers]}
    if state:
        scope["state"] = {"request_id": "r7"}
    asyncio.run(KeyGate(app, keys=keys)(scope, receive, send))
    start = next((m for m in sent if m["type"] == "http.response.start"), {"status": 0, "headers": []})
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    head = {k.decode(): v.decode() for k, v in start["headers"]}
    return start["status"], json.loads(body) if body else {}, head, seen


def test_a_request_with_a_valid_key_reaches_the_api_as_the_key_s_user() -> None:
    status, _, _, seen = gate([("Authorization", f"Bearer {ALICE}")])
    assert status == 200 and seen["user_id"] == "alice" and seen["key_user"] == "alice"
    assert gate([("Authorization", f"bearer  {BOB} ")])[3]["key_user"] == "bob"


@pytest.mark.parametrize("header", [None, "Bearer", "Bearer   ", f"Basic {ALICE}", ALICE, f"Token {ALICE}"])
def test_a_request_without_a_bearer_key_is_refused_and_told_how_to_send_one(header: str | None) -> None:
    status, body, head, seen = gate([("Authorization", header)] if header is not None else [])
    assert status == 401 and not seen and head["www-authenticate"] == "Bearer"
    assert body == {"error": {"code": "unauthorized", "message": "missing API key: send 'Authorization: Bearer <key>'"},
                    "request_id": "r7"}


@pytest.mark.parametrize("key", ["sk-wrong", ALICE + "x", ALICE[:-1], hash_key(ALICE), ALICE.upper()])
def test_a_wrong_key_is_refused(key: str) -> None:
    status, body, head, seen = gate([("Authorization", f"Bearer {key}")])
    assert status == 401 and not seen and body["error"]["message"] == "invalid API key"
    assert head["www-authenticate"] == "Bearer"


def test_a_request_that_has_no_id_yet_is_answered_and_its_user_recorded() -> None:
    assert gate([], state=False)[1] == {"error": {"code": "unauthorized", "message": "missing API key: send "
                                                  "'Authorization: Bearer <key>'"}, "request_id": ""}
    assert gate([("Authorization", "Bearer x"), ("Authorization", "Bearer y")], state=False)[1]["request_id"] == ""
    assert gate([("Authorization", f"Bearer {ALICE}")], state=False)[3] == {"user_id": "alice", "key_user": "alice",
                                                                           "reached": True}


def test_two_authorization_headers_are_refused_whichever_is_valid() -> None:
    status, body, _, seen = gate([("Authorization", f"Bearer {ALICE}"), ("authorization", f"Bearer {BOB}")])
    assert status == 400 and not seen
    assert body["error"] == {"code": "bad_request", "message": "2 Authorization headers: send exactly one"}


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/openapi.json", "/", "/static/app.js"])
def test_health_the_api_description_and_the_web_page_need_no_key(path: str) -> None:
    assert gate([], path=path)[0] == 200


@pytest.mark.parametrize("path", ["/tasks", "/healthz/x", "/static", "/v1/chat/completions", "/documents"])
def test_everything_else_needs_one(path: str) -> None:
    assert gate([], path=path)[0] == 401


def test_without_keys_the_server_is_open_and_other_traffic_passes() -> None:
    assert gate([], keys=KeyRing({}))[0] == 200
    assert gate([], kind="lifespan")[3] == {"request_id": "r7", "reached": True}


def test_the_ring_knows_its_users_and_whether_it_holds_any() -> None:
    assert RING.enabled and RING.users == {"alice", "bob"} and not KeyRing({}).enabled
    assert RING.user_for(ALICE) == "alice" and RING.user_for(BOB) == "bob" and RING.user_for("") is None


def test_new_keys_are_long_random_and_hash_to_what_the_settings_hold() -> None:
    a, b = new_key(), new_key()
    assert a != b and a.startswith("sk-saber-") and len(a) > 40
    assert hash_key(a).startswith("sha256:") and len(hash_key(a)) == 71 and KeyRing({hash_key(a): "u"}).user_for(a) == "u"


def test_keys_from_settings_and_a_keys_file_are_merged(tmp_path: Path) -> None:
    keys_file = tmp_path / "keys"
    keys_file.write_text(f"# team keys\n\n  bob {hash_key(BOB)}  # Bob's laptop # since May\n", encoding="utf-8")
    settings = Settings(server={"api_keys": {hash_key(ALICE).upper().replace("SHA256", "sha256"): " alice "},
                                "keys_file": keys_file})
    ring = KeyRing.from_settings(settings)
    assert ring.user_for(ALICE) == "alice" and ring.user_for(BOB) == "bob"
    assert KeyRing.from_settings(Settings()).enabled is False


@pytest.mark.parametrize(("line", "problem"), [
    ("bob", "expected '<user id> sha256:<hex>'"), ("bob sha256:aa extra", "expected '<user id> sha256:<hex>'"),
    (f"bob {ALICE}", "is not a key hash"), (f"bob {hash_key(ALICE)[:-1]}", "is not a key hash"),
    (f"bob {hash_key(ALICE)}0", "is not a key hash"), (f"bob {hash_key(ALICE)[7:]}", "is not a key hash"),
    ("bob sha256:" + "g" * 64, "is not a key hash"),
])
def test_a_keys_file_line_that_is_not_a_user_and_a_hash_is_refused_with_its_line(tmp_path: Path, line: str,
                                                                                 problem: str) -> None:
    keys_file = tmp_path / "keys"
    keys_file.write_text(f"alice {hash_key(ALICE)}\n{line}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"{keys_file}:2: .*{problem}"):
        read_keys_file(keys_file)


def test_a_key_written_in_place_of_its_hash_is_refused_without_showing_it_whole() -> None:
    secret = "sk-saber-" + "x" * 40
    with pytest.raises(ConfigError) as caught:
        KeyRing.from_settings(Settings(server={"api_keys": {secret: "alice"}}))
    assert str(caught.value) == (f"server.api_keys: {secret[:20]!r} is not a key hash: write 'sha256:<64 hex digits>' "
                                 "(saber serve --new-key USER prints one), never the key itself")


def test_a_blank_user_or_an_unreadable_keys_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="server.api_keys: the user id must be a non-empty string"):
        KeyRing.from_settings(Settings(server={"api_keys": {hash_key(ALICE): "  "}}))
    with pytest.raises(ConfigError) as caught:
        read_keys_file(tmp_path / "missing")
    assert str(caught.value) == f"{tmp_path / 'missing'}: cannot read the keys file: No such file or directory"


def _request(keys: KeyRing, key_user: str | None) -> Request:
    """A request as a route sees it; one the key gate passed has the key's user in its state."""
    app = SimpleNamespace(state=SimpleNamespace(keys=keys))
    scope = {"type": "http", "app": app, "headers": [], "method": "GET", "path": "/"}
    if key_user:
        scope["state"] = {"key_user": key_user}
    return Request(scope)


def test_with_a_key_the_key_decides_the_user_and_naming_another_is_forbidden() -> None:
    assert caller(_request(RING, "alice")) == "alice" and caller(_request(RING, "alice"), "alice") == "alice"
    with pytest.raises(ApiError) as caught:
        caller(_request(RING, "alice"), "bob")
    assert (caught.value.status, caught.value.code) == (403, "forbidden")
    assert caught.value.message == "user_id cannot be chosen with an API key: the key decides the user"


def test_a_route_reached_without_a_key_on_a_server_with_keys_is_refused() -> None:
    with pytest.raises(ApiError) as caught:
        caller(_request(RING, None))
    assert caught.value.status == 401 and caught.value.headers == {"WWW-Authenticate": "Bearer"}
    assert caught.value.code == "unauthorized"
    assert caught.value.message == "missing API key: send 'Authorization: Bearer <key>'"


def test_without_keys_a_request_acts_for_the_user_it_names_checked_as_the_agent_checks_it() -> None:
    request = _request(KeyRing({}), None)
    assert caller(request) == LOCAL_USER and request.scope["state"]["user_id"] == LOCAL_USER
    assert caller(request, "carol") == "carol" and request.scope["state"]["user_id"] == "carol"
    with pytest.raises(ApiError) as caught:
        caller(request, " carol")
    assert (caught.value.status, caught.value.code) == (422, "invalid_request")
    assert "must not start or end with spaces" in caught.value.message
