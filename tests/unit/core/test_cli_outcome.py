"""The exit code of ``saber ask`` from its events: an error the request recovered from is not a failure."""

from __future__ import annotations

from saber.cli.outcome import Outcome


def outcome(*events: tuple[str, dict[str, object]], model: str | None = "m") -> str | None:
    seen = Outcome(model=model)
    for kind, data in events:
        seen.note(kind, data)
    return seen.failure()


def error(where: str, message: str) -> tuple[str, dict[str, object]]:
    return "error", {"where": where, "message": message}


def done(model: str | None) -> tuple[str, dict[str, object]]:
    return "done", {"answer": "a", "mode": "tool", "task_id": "t", "model": model}


def test_a_recovered_error_with_the_models_answer_is_success() -> None:
    assert outcome(error("tool", "native function calling failed; trying a JSON prompt"), done("openai:m")) is None
    assert outcome(error("graph", "n2 get_weather failed"), done("openai:m")) is None


def test_an_answer_the_configured_model_did_not_write_fails_with_the_last_error() -> None:
    assert outcome(error("tool", "trying a JSON prompt"), error("tool", "endpoint unreachable"), done(None)) == \
        "endpoint unreachable"


def test_without_a_model_any_error_fails_with_the_first() -> None:
    assert outcome(error("memory", "first"), error("graph", "second"), done(None), model=None) == "first"
    assert outcome(done(None), model=None) is None


def test_a_broken_request_fails_whoever_wrote_the_answer() -> None:
    assert outcome(error("tool", "recovered"), error("deadline", "out of time"), done("openai:m")) == "out of time"
    assert outcome(error("checkpoint", "cannot save"), done("openai:m")) == "cannot save"
