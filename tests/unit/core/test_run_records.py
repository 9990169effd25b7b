"""The run request as the queue stores it, the one status a task is reported with, and what
counts as a dependency being down (waited out) rather than a broken run (failed)."""

from __future__ import annotations

import json
import sqlite3

import pytest
from hypothesis import given
from hypothesis import strategies as st
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from sqlalchemy.exc import OperationalError

from saber.outages import dependency_down
from saber.runs.request import HistoryTurn, RunInput, RunRequest
from saber.runs.status import reported_status, run_status


def test_a_request_survives_the_queue_and_a_malformed_one_is_named() -> None:
    request = RunRequest.read({"message": "hi", "mode": "react", "history": [{"role": "user", "content": "a"}]})
    assert RunRequest.read(request.stored()) == request
    with pytest.raises(ValueError, match=r"malformed run request: history\.0\.role"):
        RunRequest.read({"message": "hi", "history": [{"role": "wizard", "content": "a"}]})
    with pytest.raises(ValueError, match="malformed run request: surprise: Extra inputs"):
        RunRequest.read({"message": "hi", "surprise": 1})
    with pytest.raises(ValueError, match="malformed run request"):
        RunRequest.read("not json at all")  # type: ignore[arg-type]


texts = st.text(max_size=40)
run_requests = st.builds(
    RunRequest, message=texts, mode=st.none() | st.sampled_from(["chat", "tool", "rag", "react"]),
    selected_tools=st.none() | st.lists(texts, max_size=4), use_rag=st.none() | st.booleans(),
    history=st.none() | st.lists(st.builds(HistoryTurn, role=st.sampled_from(["system", "user", "assistant", "tool"]),
                                           content=texts), max_size=4),
    after=st.integers(min_value=0, max_value=2**63 - 1))


@given(run_requests)
def test_any_request_comes_back_from_its_stored_form_as_the_same_request(request: RunRequest) -> None:
    assert RunRequest.read(request.stored()) == request
    assert RunRequest.read(json.loads(request.stored())) == request  # as the queue's row gives it back


@given(run_requests)
def test_a_validated_body_becomes_the_request_it_would_validate_to(request: RunRequest) -> None:
    """``run_request`` skips validating again what the HTTP body's model validated: it must make
    the request that validation would."""
    body = RunInput.model_validate(request.model_dump(include=set(RunInput.model_fields)))
    made = body.run_request(request.history)
    assert made == RunRequest.model_validate({**request.model_dump(), "after": 0}) == RunRequest.read(made.stored())


def test_a_runs_record_decides_its_status_and_without_one_its_log_does() -> None:
    assert run_status(None, None) == "running" and run_status(None, "cancelled") == "cancelled"  # this process's run
    assert run_status("running", "done") == "running", "its worker wrote the end but has not settled it yet"
    assert run_status("failed", "cancelled") == "failed", "a malformed run's end is interrupted; its record says why"
    assert run_status("done", None) == "done", "settled, though the event store lost its events"
    assert run_status("recovering", None) == "recovering"


def test_the_record_decides_while_the_run_is_live_the_checkpoint_once_it_ended() -> None:
    assert reported_status("recovering", "running") == "recovering"  # its worker is gone: not "running"
    assert reported_status("queued", None) == "queued"
    assert reported_status("failed", None) == "failed"
    assert reported_status("done", "failed") == "failed"  # a step failed: the checkpoint knows
    assert reported_status(None, "interrupted") == "interrupted"
    assert reported_status("cancelled", None) == "cancelled"
    assert reported_status(None, None) == "unknown"


def test_an_outage_is_told_from_a_broken_run() -> None:
    assert dependency_down(RedisConnectionError("Connection refused"))
    assert dependency_down(OperationalError("SELECT 1", {}, Exception("server closed the connection")))
    assert dependency_down(sqlite3.OperationalError("database is locked"))
    assert dependency_down(ConnectionRefusedError())
    wrapped = RuntimeError("store failed")
    wrapped.__cause__ = RedisConnectionError("gone")
    assert dependency_down(wrapped)
    assert not dependency_down(ResponseError("WRONGTYPE"))
    assert not dependency_down(ValueError("malformed run request"))
    assert not dependency_down(KeyError("role"))
