"""Issue 9, items 7 and 11: clauses end at a full stop, model output must be JSON to be stored, and
the gates scan long text in windows without missing what straddles a window's edge."""

from __future__ import annotations

import pytest

from saber.agent.memory.extract import parse_memory_json, strict_json
from saber.agent.memory.gates import _OVERLAP, _WINDOW, check_memory_text
from saber.agent.memory.preferences import extract_preferences, parse_preference_json
from saber.redact import redact as redact_secrets


def test_a_name_stops_at_the_end_of_its_sentence() -> None:
    assert extract_preferences("My name is Alice. Remember that I like tea.")["name"] == "Alice"
    assert extract_preferences("My name is J.R. Smith and I live in Paris")["name"].startswith("J.R")


@pytest.mark.parametrize("reply", ["FAKE MODEL", '"a bare string"', "42", "Sure! Here you go: nothing", ""])
def test_model_output_that_is_not_json_stores_nothing(reply: str) -> None:
    assert parse_memory_json(reply) == []
    assert parse_preference_json(reply).updates == {}
    assert strict_json(reply) is None


def test_json_in_a_fence_is_read() -> None:
    assert strict_json('```json\n{"memories": []}\n```') == {"memories": []}
    assert [c.text for c in parse_memory_json('{"memories": [{"text": "Likes tea"}]}')] == ["Likes tea"]


@pytest.mark.parametrize("offset", [0, _WINDOW - _OVERLAP - 10, _WINDOW - 5, 3 * (_WINDOW - _OVERLAP) + 7])
def test_a_secret_anywhere_in_long_text_is_found_and_located(offset: int) -> None:
    secret = "sk-proj-" + "A1b2C3d4E5f6G7h8J9k0"
    text = "a " * (offset // 2) + secret + " b" * 20_000
    found = check_memory_text(text)
    assert found is not None and found.kind == "secret"
    start, end = found.span
    assert text[start:end].startswith("sk-proj-")
    assert secret not in redact_secrets(text)


def test_preferences_are_read_from_the_start_of_a_long_message_only() -> None:
    from saber.agent.memory.preferences import MAX_SCAN_CHARS

    assert extract_preferences("My name is Alice. " + "filler text. " * 10_000)["name"] == "Alice"
    assert extract_preferences("x. " * MAX_SCAN_CHARS + "My name is Bob.") == {}
