"""The request clock: waits pause it, overlapping waits count once, the hard stop moves with it."""

from __future__ import annotations

import asyncio

from saber.llm.deadline import _Clock, deadline_paused, request_deadline, time_left


async def test_overlapping_waits_stop_the_clock_once_and_lift_the_hard_stop_meanwhile() -> None:
    loop = asyncio.get_running_loop()
    async with asyncio.timeout_at(loop.time() + 100.0) as stop:
        clock = _Clock(at=50.0, stop=stop)
        before = stop.when()
        assert before is not None
        clock.pause(10.0)
        assert stop.when() is None and clock.left(14.0) == 40.0  # stopped at 10
        clock.pause(12.0)  # a second step asks while the first waits
        clock.resume(15.0)
        assert stop.when() is None and clock.left(18.0) == 40.0  # still waiting on one
        clock.resume(20.0)
        assert clock.at == 60.0 and clock.left(20.0) == 40.0
        assert stop.when() == 20.0 + (before - 10.0)  # what was left of the hard stop at the pause
        clock.pause(30.0)
        clock.resume(31.5)
        assert clock.at == 61.5
        await asyncio.sleep(0)


async def test_time_left_reads_the_current_request_and_outside_one_there_is_none() -> None:
    assert time_left() is None
    with deadline_paused():  # no request: nothing to pause
        pass
    loop = asyncio.get_running_loop()
    with request_deadline(loop.time() + 30.0):
        left = time_left()
        assert left is not None and 29.0 < left <= 30.0
        with deadline_paused():
            await asyncio.sleep(0.05)
        after = time_left()
        assert after is not None and after > left - 0.05  # the wait was given back
    assert time_left() is None
