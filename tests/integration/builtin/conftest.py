"""Fixtures: a loopback imitation of the outside services (``refused_url`` is the suite's)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from builtin_fakes import FakeService, serve


@pytest.fixture
def fake_service() -> Iterator[FakeService]:
    with serve() as service:
        yield service

