"""``saber serve``: run the app under uvicorn, with a shutdown that lets requests finish.

On SIGTERM (or Ctrl-C) the listening socket closes at once, running requests get
``server.shutdown_grace`` seconds, then the rest are cancelled: react tasks keep their
checkpoints (status cancelled, resumable) and open streams end with ``done`` (interrupted).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer

from saber.cli.output import CLIError, UsageError
from saber.server.listen import listen_socket

if TYPE_CHECKING:  # the server's libraries load only when serving: the other commands stay quick
    import socket
    from collections.abc import Callable

    from fastapi import FastAPI

    from saber.server.auth import KeyRing

log = logging.getLogger(__name__)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_host(host: str, keys: KeyRing, insecure_no_auth: bool) -> None:
    if keys.enabled or is_loopback(host) or insecure_no_auth:
        return
    raise UsageError(
        f"refusing to listen on {host}: no API keys are configured, so anyone who can reach this address "
        "would use this agent, its tools and its data as you. Add keys ([server] api_keys in saber.toml or "
        "server.keys_file; `saber serve --new-key USER` prints one), bind 127.0.0.1, or pass --insecure-no-auth")


def run(app: FastAPI, *, host: str, port: int, grace: float, log_level: str = "info",
        sock: socket.socket | None = None, on_ready: Callable[[], None] | None = None) -> None:
    """Serve ``app`` until SIGTERM/SIGINT, then shut down as the module docstring says (on ``sock``
    when given, already bound); ``on_ready`` is called once the app has started (not when it could not)."""
    import uvicorn

    class _Server(uvicorn.Server):
        """uvicorn's server, telling the app's run manager to wind down the moment a signal arrives
        (uvicorn itself would run the app's shutdown only after every connection closed)."""

        winding_down: asyncio.Task[None] | None = None

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started and on_ready is not None:
                on_ready()

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            super().handle_exit(sig, frame)
            runs = getattr(app.state, "runs", None)
            if runs is None or self.winding_down is not None:
                return
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return
            self.winding_down = loop.create_task(runs.shutdown(grace))

    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=int(grace) + 15,
                            lifespan="on", access_log=False)  # the app writes its own (request id, user, duration)
    quiet = _NoStartupTraceback(app)
    logging.getLogger("uvicorn.error").addFilter(quiet)
    try:
        _Server(config).run(sockets=[sock] if sock is not None else None)
    except SystemExit:
        if app.state.startup_error is None:
            raise
    finally:
        logging.getLogger("uvicorn.error").removeFilter(quiet)
    if app.state.startup_error is not None:
        raise UsageError(f"cannot start: {app.state.startup_error}")


class _NoStartupTraceback(logging.Filter):
    """The agent could not be built: that is said in one line afterwards, not as a traceback."""

    def __init__(self, app: FastAPI) -> None:
        super().__init__()
        self.app = app

    def filter(self, record: logging.LogRecord) -> bool:
        return self.app.state.startup_error is None or not str(record.msg).startswith("Traceback")


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string: quoted, with quotes, backslashes and control characters escaped."""
    escapes = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
    out = (escapes.get(c) or (f"\\u{ord(c):04x}" if ord(c) < 0x20 or ord(c) == 0x7F else c) for c in text)
    return '"' + "".join(out) + '"'


def _print_new_key(user: str) -> None:
    """A new key and the lines that grant it to ``user``: one for saber.toml, one for the keys file
    when that file's format (``<user id> <hash>``, ``#`` starting a comment) can hold the user id."""
    from saber.agent.validation import check_user_id
    from saber.server.auth import hash_key, new_key

    try:
        check_user_id(user)
    except ValueError as exc:
        raise UsageError(f"--new-key: {exc}") from None
    key = new_key()
    typer.echo(f"key (give it to {user}; it is not stored): {key}")
    typer.echo(f"saber.toml, under [server.api_keys]:  {toml_string(hash_key(key))} = {toml_string(user)}")
    if any(c.isspace() or c == "#" for c in user):
        typer.echo("(the keys file cannot hold this user id: it has a space or '#'; use saber.toml)")
    else:
        typer.echo(f"or a line of the keys file:  {user} {hash_key(key)}")


def serve_command(
    host: Annotated[str, typer.Option(help="Address to listen on (loopback unless API keys are configured).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.", min=0, max=65535)] = 8000,
    insecure_no_auth: Annotated[bool, typer.Option("--insecure-no-auth",
                                                   help="Listen on a non-loopback address without API keys.")] = False,
    new_key_for: Annotated[str | None, typer.Option("--new-key", metavar="USER",
                                                    help="Print a new API key for USER and its hash line, then exit.")] = None,
    with_worker: Annotated[int, typer.Option("--with-worker", min=0, metavar="N",
                                             help="Distributed mode: also run a worker with N slots in this process.")] = 0,
) -> None:
    """Run the HTTP API (REST + SSE, and an OpenAI-compatible /v1)."""
    from saber.server.auth import KeyRing

    if new_key_for is not None:
        _print_new_key(new_key_for)
        return
    from saber.config import Settings

    settings = Settings.load()
    keys = KeyRing.from_settings(settings)
    check_host(host, keys, insecure_no_auth)
    from saber.server.app import create_app

    logging.getLogger("saber").setLevel(logging.WARNING)  # a server's operator sees its warnings
    logging.getLogger("saber.server.access").setLevel(logging.INFO)
    if not logging.getLogger().handlers or logging.getLogger().level > logging.INFO:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        access = logging.getLogger("saber.server.access")
        access.addHandler(handler)
        access.propagate = False
    try:
        sock = listen_socket(host, port)
    except OSError as exc:
        raise CLIError(str(exc)) from None
    port = sock.getsockname()[1]
    app = create_app(settings=settings, bound_host=host)
    app.state.with_worker = with_worker
    mode = "API keys" if keys.enabled else "local, no keys"
    run(app, host=host, port=port, grace=settings.server.shutdown_grace, sock=sock,
        on_ready=lambda: typer.echo(f"saber: serving on http://{host}:{port} ({mode})", err=True))
