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
