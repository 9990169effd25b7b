"""The listening socket a server (``saber serve``, ``saber mcp serve --http``) binds before it starts."""

from __future__ import annotations

import socket


def listen_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port``, before any server starts: a port in use or an address that
    is not this machine's is an OSError naming it (not uvicorn's log lines and its exit code 3)."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock
