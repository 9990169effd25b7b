"""schemathesis against /openapi.json of a live server: no 5xx, and responses match the schema."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from server_helpers import LiveServer, make_agent, settings_for

from saber.tools import tool


@tool
def echo(text: str) -> str:
    """Return the text (a no-op tool)."""
    return text


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    settings = settings_for(tmp_path_factory.mktemp("schema") / "home", server={"max_running_per_user": 64})
    server = LiveServer(make_agent(settings, None, tools=[echo]), settings).start()
    yield server
    server.stop()


CHECKS: list[Callable[..., object]] = [
    schemathesis.checks.not_a_server_error, status_code_conformance, content_type_conformance,
    response_schema_conformance,
]


@pytest.mark.slow
def test_api_conforms_to_its_schema(live: LiveServer) -> None:
    schema = schemathesis.openapi.from_url(f"{live.url}/openapi.json")
    tested = []
    for result in schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy())
        @settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def check(case: schemathesis.Case) -> None:
            case.call_and_validate(checks=CHECKS, timeout=60)

        check()
        tested.append(operation.label)
    assert len(tested) >= 15, tested
