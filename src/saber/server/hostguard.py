"""Guards against web pages driving the server from the user's browser.

- A **Host allow-list** stops DNS rebinding: a page on ``evil.example`` whose name is made to
  resolve to 127.0.0.1 reaches the server with ``Host: evil.example``. Allowed are loopback names
  and addresses, the address the connection arrived at, the address ``saber serve`` was given,
  and ``server.allowed_hosts``.
- A **same-origin check** on every request that changes something (any method but GET, HEAD,
  OPTIONS): a browser sends ``Origin`` and ``Sec-Fetch-Site`` with them, so a cross-site form or
  ``fetch`` (a multipart upload needs no preflight) is refused. Clients that send neither (curl,
  the CLI, the ``openai`` client) are not browsers and pass.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from saber.server.errors import error_response, shown

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
_HOW = "server.allowed_hosts in saber.toml, or SABER_SERVER_ALLOWED_HOSTS"


def split_host(value: str) -> tuple[str, int | None] | None:
    """``host[:port]`` (``[v6]:port`` too) as a lower-case name and a port; ``None`` if malformed."""
    value = value.strip().lower()
    if value.startswith("["):
        name, sep, rest = value[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:] if rest else ""
    else:
        name, _, port_text = value.partition(":")
        if ":" in port_text:
            return None
    if port_text and not (port_text.isascii() and port_text.isdigit() and len(port_text) <= 5):
        return None
    if not name or any(c in name for c in "/\\@ ?#"):
        return None
    return name.rstrip("."), int(port_text) if port_text else None


def is_loopback(name: str) -> bool:
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class AllowedHosts:
    """The names a server answers to. ``configured``: ``server.allowed_hosts`` (``.example.com``
    takes subdomains, ``*`` anything); ``bound``: the address ``saber serve`` listens on."""

    def __init__(self, configured: Iterable[str], bound: str | None = None) -> None:
        self.configured = [h.strip().lower().rstrip(".") for h in configured if h.strip()]
        self.any = "*" in self.configured
        self.bound = (bound or "").strip("[]").lower() or None

    def trusted(self, name: str) -> bool:
        """``name`` is one the operator listed (an origin on it is trusted, as the server itself)."""
        return any(name == h or (h.startswith(".") and (name.endswith(h) or name == h[1:]))
                   for h in self.configured if h != "*")

    def allows(self, name: str, local_address: str | None) -> bool:
        return (self.any or is_loopback(name) or name == self.bound or name == (local_address or "").lower()
                or self.trusted(name))


class HostOriginGuard:
    """Pure ASGI: refuses a request whose ``Host`` is not allowed (403 ``host_not_allowed``), and a
    state-changing one from another site (403 ``cross_site``), before any other work is done."""

    def __init__(self, app: ASGIApp, *, hosts: AllowedHosts) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        problem = self.problem(scope)
        if problem is None:
            await self.app(scope, receive, send)
            return
        code, message = problem
        request_id = str(scope.get("state", {}).get("request_id", ""))
        response = error_response(403, code, message, request_id, openai=scope.get("path", "").startswith("/v1/"))
        await response(scope, receive, send)

    def problem(self, scope: Scope) -> tuple[str, str] | None:
        headers: dict[bytes, list[str]] = {}
        for key, value in scope.get("headers") or []:
            headers.setdefault(key.lower(), []).append(value.decode("latin-1"))
        hosts = headers.get(b"host", [])
        if len(hosts) > 1:
            return "host_not_allowed", f"{len(hosts)} Host headers: send one"
        host = split_host(hosts[0]) if hosts else None
        if hosts and host is None:
            return "host_not_allowed", f"Host {shown(hosts[0])} is not a host name"
        server = scope.get("server")
        if host is not None and not self.hosts.allows(host[0], server[0] if server else None):
            return "host_not_allowed", (
                f"Host {shown(host[0])} is not a name this server answers to (a guard against DNS rebinding); "
                f"if the server is reached by that name, add it to {_HOW}")
        if scope["method"] in SAFE_METHODS:
            return None
        return self._cross_site(headers, host)

    def _cross_site(self, headers: dict[bytes, list[str]], host: tuple[str, int | None] | None) -> tuple[str, str] | None:
        origins = headers.get(b"origin", [])
        site = (headers.get(b"sec-fetch-site") or [""])[0].strip().lower()
        if site == "cross-site" or (site == "same-site" and not origins):
            sent = f" (Origin {shown(origins[0].strip())})" if origins else ""
            return "cross_site", (f"Sec-Fetch-Site: {site}{sent}: a request from another site's page may not "
                                  "change anything here")
        if origins:
            origin = origins[0].strip()
            if len(origins) == 1 and self._same_origin(origin, host):
                return None
            return "cross_site", (f"Origin {shown(origin)} is another site than this server's: a web page may not "
                                  f"change anything here (a page served under another name: add it to {_HOW})")
        return None

    def _same_origin(self, origin: str, host: tuple[str, int | None] | None) -> bool:
        try:
            parts = urlsplit(origin)
            port = parts.port
        except ValueError:
            return False
        if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
            return False  # "null" (a sandboxed frame, a file), or not a web origin
        name = parts.hostname.rstrip(".")
        if self.hosts.trusted(name):
            return True
        default = _DEFAULT_PORTS[parts.scheme]
        return host is not None and host[0] == name and (host[1] or default) == (port or default)
