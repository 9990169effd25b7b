"""The web page at ``/``: the built assets shipped in ``saber/server/static`` (no build at run time,
nothing from a CDN), served with a Content-Security-Policy that lets only the page's own script
run — a second line of defence behind the page's Markdown sanitiser."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

STATIC = Path(__file__).parent / "static"

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")


class _SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []),
                                      (b"content-security-policy", CSP.encode()),
                                      (b"x-content-type-options", b"nosniff")]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def mount_web_ui(app: FastAPI) -> None:
    """Serves the page at ``/`` and its assets under ``/static`` (both open: the page asks for a key
    itself when the API needs one)."""
    if not (STATIC / "index.html").is_file():
        return

    @app.get("/", include_in_schema=False)
    async def index() -> Response:
        response = FileResponse(STATIC / "index.html", media_type="text/html")
        response.headers["Content-Security-Policy"] = CSP
        response.headers["Cache-Control"] = "no-cache"
        return response

    app.mount("/static", _SecurityHeaders(StaticFiles(directory=STATIC)), name="static")
