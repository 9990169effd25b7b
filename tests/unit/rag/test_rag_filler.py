from __future__ import annotations

import threading

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
