"""Race groups: interchangeable nodes run side by side; the first success wins.

Losers are cancelled at once and marked skipped, never failed: losing a race is not an error
(the original counted cancelled losers as failures and replanned on them). A racer that failed
before another one won is also just a loser. If every racer fails, each keeps its own error.

While a plan streams, a race starts with the members written so far and later members ``join``
it until it is decided (see ``graph/streaming.py``); one written after that is settled by the
scheduler (``GraphState.finish_race``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from saber.config.graph import GraphConfig
from saber.graph.node import Node, NodeStatus
from saber.graph.outcome import NodeOutcome, RaceOutcome
from saber.graph.retry import seconds_text

RunNode = Callable[[Node], Coroutine[Any, Any, NodeOutcome]]


class Race:
    """One race group's run. Only the event loop's thread calls ``join`` (the scheduler loop)."""

    def __init__(self, group: str, members: Sequence[Node], run_node: RunNode, config: GraphConfig,
                 report: Callable[[RaceOutcome], None]) -> None:
        self.group = group
        self.members = list(members)
        self.decided = False
        """Set the moment the outcome is known (before it is reported): no member joins after."""
        self._run_node = run_node
        self._config = config
        self._report = report
        self._waiting = list(members)
        self._wake: asyncio.Future[None] | None = None

    def join(self, node: Node) -> bool:
        """Add a member to the race under way; False once it is decided (the caller settles it)."""
        if self.decided:
            return False
        self.members.append(node)
        self._waiting.append(node)
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)
        return True

    async def run(self) -> None:
        """Run the race and report its outcome the moment it is known; then wait for the
        cancelled losers to unwind (so their ``max_parallel`` slots are free) before returning."""
        running: dict[asyncio.Task[NodeOutcome], Node] = {}
        started: dict[str, float] = {}
        outcomes: dict[str, NodeOutcome] = {}
        winner: NodeOutcome | None = None

        def start_next() -> None:
            node = self._waiting.pop(0)
            started[node.id] = time.perf_counter()
            name = f"saber-race-{self.group}-{node.id}"
            running[asyncio.create_task(self._run_node(node), name=name)] = node

        timed_out = False
        try:
            async with asyncio.timeout(self._config.race_timeout or None):
                start_next()
                while winner is None and (running or self._waiting):
                    finished = await self._next_finished(running, start_next)
                    for task in finished:
                        outcome = outcomes[running.pop(task).id] = task.result()
                        if winner is None and outcome.status is NodeStatus.DONE:
                            winner = outcome
                    if winner is None and finished and self._waiting and self._config.hedge is not None:
                        start_next()  # a racer failed: do not wait out the hedge delay
        except TimeoutError:
            timed_out = True
        except asyncio.CancelledError:  # the run is being cancelled: take the racers down with us
            self.decided = True
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
            raise
        self.decided = True
        for task in running:
            task.cancel()

        self._report(_outcome(self.group, self.members, winner, outcomes, started, timed_out, self._config))
        if running:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(*running, return_exceptions=True)

    async def _next_finished(self, running: dict[asyncio.Task[NodeOutcome], Node],
                             start_next: Callable[[], None]) -> list[asyncio.Task[NodeOutcome]]:
        """Start who may start now, then wait for racers to finish (empty: a member joined, or
        the hedge delay passed and the next one was started)."""
        hedge = self._config.hedge
        while self._waiting and hedge is None:  # hedged members start on the delay or a failure
            start_next()
        wake: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._wake = wake
        try:
            wait_for = hedge if (hedge is not None and self._waiting) else None
            watched: set[asyncio.Future[Any]] = {wake, *running}
            done, _ = await asyncio.wait(watched, timeout=wait_for, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._wake = None
            wake.cancel()
        finished = [task for task in running if task in done]
        if not finished and wake not in done:  # hedging: the racers so far are slow, add the next one
            start_next()
        return finished


def _outcome(
    group: str, members: Sequence[Node], winner: NodeOutcome | None, outcomes: dict[str, NodeOutcome],
    started: dict[str, float], timed_out: bool, config: GraphConfig,
) -> RaceOutcome:
    now = time.perf_counter()
    out: list[NodeOutcome] = [winner] if winner is not None else []
    for node in members:
        if winner is not None and node.id == winner.node_id:
            continue
        own = outcomes.get(node.id)
        ran_ms = (now - started[node.id]) * 1000.0 if node.id in started else 0.0
        if winner is not None:
            note = f" (this racer had failed: {own.error})" if own is not None and own.error else ""
            out.append(NodeOutcome(node_id=node.id, status=NodeStatus.SKIPPED, duration_ms=ran_ms,
                                   error=f"lost race '{group}' to {winner.node_id}{note}"))
        elif own is not None:
            out.append(own)
        else:
            why = f"race group '{group}' timed out after {seconds_text(config.race_timeout)}" if timed_out else "not run"
            out.append(NodeOutcome(node_id=node.id, status=NodeStatus.FAILED, error=why, duration_ms=ran_ms))
    return RaceOutcome(group=group, winner=winner.node_id if winner is not None else None, outcomes=out)
