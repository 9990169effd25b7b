"""The run request as the queue stores it, the one status a task is reported with, and what
counts as a dependency being down (waited out) rather than a broken run (failed)."""

from __future__ import annotations

import sqlite3

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from sqlalchemy.exc import OperationalError

from saber.outages import dependency_down
from saber.runs.request import RunRequest
from saber.runs.status import reported_status


def test_a_request_survives_the_queue_and_a_malformed_one_is_named() -> None:
    request = RunRequest.read({"message": "hi", "mode": "react", "history": [{"role": "user", "content": "a"}]})
    assert RunRequest.read(request.stored()) == request
    with pytest.raises(ValueError, match=r"malformed run request: history\.0\.role"):
        RunRequest.read({"message": "hi", "history": [{"role": "wizard", "content": "a"}]})
    with pytest.raises(ValueError, match="malformed run request: surprise: Extra inputs"):
        RunRequest.read({"message": "hi", "surprise": 1})
    with pytest.raises(ValueError, match="malformed run request"):
        RunRequest.read("not json at all")  # type: ignore[arg-type]


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
