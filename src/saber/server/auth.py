"""API keys: stored as SHA-256 hashes, each mapping to a user id.

Keys come from ``[server] api_keys`` in ``saber.toml`` (``"sha256:<hex>" = "alice"``) and from the
file ``server.keys_file`` (one ``alice sha256:<hex>`` per line). A request proves its user with
``Authorization: Bearer <key>`` — the header the ``openai`` client sends. With no keys at all
the server is a local single-user tool (loopback only, enforced by ``saber serve``).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from pathlib import Path

from fastapi import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from saber.agent.validation import check_user_id
from saber.config import ConfigError, Settings
from saber.server.errors import ApiError, error_response

LOCAL_USER = "local"
"""The user of a server without keys (a request may name another with ``user_id``)."""


def hash_key(key: str) -> str:
    return "sha256:" + hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_key() -> str:
    return "sk-saber-" + secrets.token_urlsafe(32)


class KeyRing:
    """Hashed keys → user ids. Lookup hashes the presented key and compares in constant time."""

    def __init__(self, hashed: Mapping[str, str]) -> None:
        self._users = {h.lower(): user for h, user in hashed.items()}

    @property
    def enabled(self) -> bool:
        return bool(self._users)

    @property
    def users(self) -> set[str]:
        return set(self._users.values())

    def user_for(self, key: str) -> str | None:
        presented = hash_key(key)
        found = None
        for stored, user in self._users.items():
            if hmac.compare_digest(stored, presented):
                found = user
        return found

    @classmethod
    def from_settings(cls, settings: Settings) -> KeyRing:
        hashed: dict[str, str] = {}
        for h, user in settings.server.api_keys.items():
            hashed[_checked_hash(h, "server.api_keys")] = _checked_user(user, "server.api_keys")
        if settings.server.keys_file is not None:
            hashed.update(read_keys_file(settings.server.keys_file))
        return cls(hashed)


def read_keys_file(path: Path) -> dict[str, str]:
    try:
        lines = path.expanduser().read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the keys file: {exc.strerror or exc}") from None
    out: dict[str, str] = {}
    for number, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2:
            raise ConfigError(f"{path}:{number}: expected '<user id> sha256:<hex>'")
        out[_checked_hash(parts[1], f"{path}:{number}")] = _checked_user(parts[0], f"{path}:{number}")
    return out


def _checked_hash(value: str, where: str) -> str:
    digest = value.lower().removeprefix("sha256:")
    if not value.lower().startswith("sha256:") or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise ConfigError(f"{where}: {value[:20]!r} is not a key hash: write 'sha256:<64 hex digits>' "
                          "(saber serve --new-key USER prints one), never the key itself")
    return "sha256:" + digest


def _checked_user(user: str, where: str) -> str:
    if not isinstance(user, str) or not user.strip():
        raise ConfigError(f"{where}: the user id must be a non-empty string")
    return user.strip()


PUBLIC_PATHS = frozenset({"/healthz", "/readyz", "/openapi.json", "/"})
"""Open without a key: health, the API's description, and the web page (which asks for a key itself)."""
PUBLIC_PREFIXES = ("/static/",)


class KeyGate:
    """Checks the key before anything else (body parsing included), so a caller without one
    learns nothing but 401; puts the key's user in the request state."""

    def __init__(self, app: ASGIApp, *, keys: KeyRing) -> None:
        self.app = app
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not self.keys.enabled or path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES):
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        given = [v.decode("latin-1") for k, v in scope.get("headers") or [] if k.lower() == b"authorization"]
        if len(given) > 1:  # which one counts would depend on the code reading them: neither does
            response = error_response(400, "bad_request", f"{len(given)} Authorization headers: send exactly one",
                                      str(state.get("request_id", "")))
            await response(scope, receive, send)
            return
        scheme, _, key = (given[0] if given else "").partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            message = "missing API key: send 'Authorization: Bearer <key>'"
        else:
            user = self.keys.user_for(key.strip())
            if user is not None:
                state["user_id"] = state["key_user"] = user
                await self.app(scope, receive, send)
                return
            message = "invalid API key"
        response = error_response(401, "unauthorized", message, str(state.get("request_id", "")),
                                  {"WWW-Authenticate": "Bearer"})
        await response(scope, receive, send)


def authenticate(request: Request) -> str | None:
    """The key's user (checked by ``KeyGate``), ``None`` in local mode."""
    user = request.scope.get("state", {}).get("key_user")
    if request.app.state.keys.enabled and user is None:  # a route the gate let through without a key
        raise ApiError(401, "unauthorized", "missing API key: send 'Authorization: Bearer <key>'",
                       headers={"WWW-Authenticate": "Bearer"})
    return str(user) if user is not None else None


def caller(request: Request, asked: str | None = None) -> str:
    """The user a request acts for: the key's; in local mode ``asked`` or the local user."""
    user = authenticate(request)
    if user is not None:
        if asked is not None and asked != user:
            raise ApiError(403, "forbidden", "user_id cannot be chosen with an API key: the key decides the user")
        return user
    chosen = LOCAL_USER if asked is None else _asked_user(asked)
    request.scope.setdefault("state", {})["user_id"] = chosen
    return chosen


def _asked_user(asked: str) -> str:
    """A ``user_id`` named in local mode, checked as the agent checks it (never trimmed into another user)."""
    try:
        return check_user_id(asked)
    except ValueError as exc:
        raise ApiError(422, "invalid_request", str(exc)) from None
