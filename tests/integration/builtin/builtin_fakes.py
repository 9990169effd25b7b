"""A real HTTP server on 127.0.0.1 that imitates the outside services the built-in tools call
(Open-Meteo geocoding and forecast, Tavily, SearXNG). Fixtures are in conftest.py."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


@dataclass
class Route:
    status: int = 200
    body: Any = None
    raw: bytes | None = None
    """Sent as is (with text/html) instead of JSON."""
    hang: bool = False
    """Never answer (until the test ends): a service that does not reply in time."""


@dataclass
class FakeService:
    base_url: str
    routes: dict[str, Route | Callable[[Seen], Route]] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    def url(self, path: str) -> str:
        return self.base_url + path

    def calls(self, path: str) -> list[Seen]:
        return [s for s in self.seen if s.path == path]


def _handler_for(service: FakeService) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _serve(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw_body = self.rfile.read(length) if length else b""
            seen = Seen(
                method=self.command,
                path=parts.path,
                query={k: v[-1] for k, v in parse_qs(parts.query).items()},
                headers={k.lower(): v for k, v in self.headers.items()},
                body=json.loads(raw_body) if raw_body else None,
            )
            service.seen.append(seen)
            route = service.routes.get(parts.path, Route(status=404, body={"error": f"no route {parts.path}"}))
            if callable(route):
                route = route(seen)
            if route.hang:
                service.release.wait()
                return
            payload = route.raw if route.raw is not None else json.dumps(route.body, ensure_ascii=False).encode()
            self.send_response(route.status)
            self.send_header("Content-Type", "text/html" if route.raw is not None else "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = _serve
        do_POST = _serve

    return Handler


@contextmanager
def serve() -> Iterator[FakeService]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    service = FakeService(base_url=f"http://127.0.0.1:{server.server_address[1]}")
    server.RequestHandlerClass = _handler_for(service)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-service",
                              daemon=True)
    thread.start()
    try:
        yield service
    finally:
        service.release.set()
        server.shutdown()
        server.server_close()
        thread.join()
