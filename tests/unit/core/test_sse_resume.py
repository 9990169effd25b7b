"""Resuming an event stream: ``Last-Event-ID`` is the sequence number of the last event a client
saw, and anything that is not one is refused with the reason instead of replaying from a guess."""

from __future__ import annotations

import pytest
from fastapi import Request
from hypothesis import given
from hypothesis import strategies as st

from saber.server.errors import ApiError
from saber.server.sse import MAX_EVENT_ID, last_event_id


def resume_from(value: str | None) -> int:
    headers = [] if value is None else [(b"last-event-id", value.encode("latin-1"))]
    return last_event_id(Request({"type": "http", "headers": headers, "method": "GET", "path": "/"}))


@given(st.integers(min_value=0, max_value=MAX_EVENT_ID), st.sampled_from(["", " ", "\t"]))
def test_a_sequence_number_resumes_after_that_event(seq: int, pad: str) -> None:
    assert resume_from(f"{pad}{seq}{pad}") == seq


def test_no_header_or_an_empty_one_replays_from_the_start() -> None:
    assert resume_from(None) == 0 and resume_from("") == 0 and resume_from("  ") == 0


@pytest.mark.parametrize("value", ["abc", "-1", "+1", "1.0", "1e3", "²", "¹", "0x10", "1 2",
                                   str(MAX_EVENT_ID + 1), "9" * 20, "0" * 20, "1" * 5000])
def test_anything_else_is_refused_naming_the_header_and_what_it_takes(value: str) -> None:
    with pytest.raises(ApiError) as caught:
        resume_from(value)
    assert caught.value.status == 400 and caught.value.code == "bad_request"
    assert caught.value.message.startswith("Last-Event-ID: ")
    assert caught.value.message.endswith(f"is not an event sequence number (digits 0-9, at most {MAX_EVENT_ID})")
    assert len(caught.value.message) < 400, "a huge header is not echoed whole"


def test_the_largest_sequence_number_is_accepted() -> None:
    assert resume_from(str(MAX_EVENT_ID)) == 2**63 - 1 and resume_from("0" * 19) == 0
