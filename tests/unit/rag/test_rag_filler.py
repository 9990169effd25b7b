from __future__ import annotations

import logging
import threading

import pytest

from saber.rag.filler import VectorFiller


def test_a_kick_runs_a_pass_and_idle_says_when_it_is_done() -> None:
    passes: list[int] = []
    filler = VectorFiller(lambda stop: passes.append(1) or 3)
    filler.kick()
    assert filler.wait_idle(10) and filler.filled == 3 and filler.running
    filler.kick()
    assert filler.wait_idle(10) and filler.filled == 6 and len(passes) == 2
    assert filler.stop(10) and not filler.running
    filler.kick()  # a stopped filler stays stopped
    assert not filler.running


def test_a_kicked_filler_says_filling_before_its_pass_begins() -> None:
    """An upload answers as soon as its chunks are written: the filler it kicked may not have begun
    its pass yet, and must not be reported idle with the new chunks pending."""
    begin = threading.Event()
    filler = VectorFiller(lambda stop: 1)
    pass_loop = filler._run
    filler._run = lambda: (begin.wait(10), pass_loop())  # type: ignore[method-assign]
    filler.kick()
    assert filler.running and filler.status().state == "filling"
    begin.set()
    assert filler.wait_idle(10) and filler.status().state == "idle"
    assert filler.stop(10)


def test_a_failing_pass_is_recorded_and_the_thread_lives_on() -> None:
    failed = threading.Event()

    def fill(stop: threading.Event) -> int:
        failed.set()
        raise RuntimeError("embedder down")

    filler = VectorFiller(fill)
    filler.kick()
    assert failed.wait(10)
    assert filler.stop(10)  # wakes it from the back-off at once
    assert filler.error == "RuntimeError: embedder down" and not filler.wait_idle(0)


def test_status_says_failing_with_the_error_and_the_retry_then_idle_once_a_pass_works() -> None:
    from saber.rag.documents import EmbeddingError
    from saber.rag.filler import ERROR_BACKOFF

    outcomes: list[Exception | int] = [EmbeddingError("embedder openai:m at http://x/v1/embeddings answered 401: "
                                                      "Incorrect API key provided: sk-abcdef123456\nsee docs"), 2]

    def fill(stop: threading.Event) -> int:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    filler = VectorFiller(fill)
    assert filler.status().state == "stopped" and filler.status().error is None
    filler.kick()
    assert filler.wait_attempt(10) and not filler.wait_idle(0)
    status = filler.status()
    assert status.state == "failing" and status.failed_at is not None
    assert status.error == ("embedder openai:m at http://x/v1/embeddings answered 401: "
                            "Incorrect API key provided: sk-*** see docs")  # one line, the key masked
    assert status.retry_in_s is not None and 0 <= status.retry_in_s <= ERROR_BACKOFF
    assert status.to_dict()["state"] == "failing" and status.to_dict()["failed_at"] == status.failed_at.isoformat()
    filler.kick()  # wakes it from the back-off: the next pass works
    assert filler.wait_idle(10) and filler.filled == 2
    assert filler.status().state == "idle" and filler.status().error is None and filler.error is None
    assert filler.stop(10) and filler.status().state == "stopped"


def test_failures_in_a_row_wait_longer_each_time_and_a_repeat_is_not_logged_again(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    from saber.rag import filler as filler_module

    waits: list[float] = []
    errors = iter(["down", "down", "down", "still down", "down"])

    def fill(stop: threading.Event) -> int:
        error = next(errors, None)
        if error is None:
            return 1
        raise RuntimeError(error)

    done = threading.Event()

    class CountingEvent(threading.Event):
        """The filler's wake-up event: records each back-off and returns at once."""

        def wait(self, timeout: float | None = None) -> bool:
            if timeout is not None and timeout != filler.idle_poll:
                waits.append(timeout)
            elif timeout == filler.idle_poll:
                done.set()
                return super().wait(timeout)
            return True

    monkeypatch.setattr(filler_module, "MAX_ERROR_BACKOFF", 4 * filler_module.ERROR_BACKOFF)
    filler = VectorFiller(fill, idle_poll=1000.0)  # not a back-off's length: the wait below tells them apart
    filler._wake = CountingEvent()
    with caplog.at_level(logging.DEBUG, logger="saber.rag.filler"):
        filler.kick()
        assert done.wait(10)
    assert filler.stop(10)
    base = filler_module.ERROR_BACKOFF
    assert waits == [base, 2 * base, 4 * base, 4 * base, 4 * base]  # doubled, capped
    assert filler.failures == 0 and filler.error is None and filler.filled == 1  # the working pass reset it
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert [w.split(" (")[0] for w in warned] == ["vector filler: RuntimeError: down",
                                                   "vector filler: RuntimeError: still down",
                                                   "vector filler: RuntimeError: down"]
