"""Fixtures: a loopback imitation of the outside services, and a port that refuses connections."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from builtin_fakes import FakeService, serve


@pytest.fixture
def fake_service() -> Iterator[FakeService]:
    with serve() as service:
        yield service


@pytest.fixture
def refused_url() -> Iterator[str]:
    """A loopback port that is bound but not listening: connecting is refused at once."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        sock.close()
