"""A stream whose client hung up cancels its task from the stream's clean-up, which is itself being
cancelled: the cancel must still go out (shielded), and a cancel that hangs must not hold the
clean-up for ever (``CANCEL_WAIT_SECONDS``)."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest

from saber.server import sse


class Manager:
    """A run manager whose cancel reads something first (the distributed mode reads Redis) and
    then sends the signal; ``hang`` keeps it from ever sending until ``release`` is set."""

    def __init__(self, *, hang: bool = False) -> None:
        self.hang = hang
        self.sent: list[str] = []
        self.release = asyncio.Event()

    def cancel_soon(self, run: Any) -> asyncio.Task[bool]:
        async def cancel() -> bool:
            await asyncio.sleep(0)  # the read before the signal
            await asyncio.sleep(0)
            if self.hang:
                await self.release.wait()
            self.sent.append(run)
            return True

        return asyncio.get_running_loop().create_task(cancel())


async def test_the_cancel_goes_out_though_the_clean_up_is_being_cancelled() -> None:
    manager = Manager()
    with anyio.CancelScope() as scope:
        scope.cancel()  # the stream's task group is cancelled: every await in it would raise at once
        await sse.cancel_abandoned(manager, "t-1")  # type: ignore[arg-type]
    assert manager.sent == ["t-1"], "the clean-up waited for the cancel to be sent"


async def test_a_cancel_that_hangs_holds_the_clean_up_only_so_long(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sse, "CANCEL_WAIT_SECONDS", 0.05)
    manager = Manager(hang=True)
    cleanup = asyncio.get_running_loop().create_task(sse.cancel_abandoned(manager, "t-2"))  # type: ignore[arg-type]
    try:
        finished, _ = await asyncio.wait([cleanup], timeout=10)
        assert finished == {cleanup}, "the clean-up gave up waiting after CANCEL_WAIT_SECONDS"
        assert cleanup.result() is None and manager.sent == []
    finally:
        manager.release.set()
        await cleanup
