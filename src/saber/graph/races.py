"""Race groups: interchangeable nodes run side by side; the first success wins.

Losers are cancelled at once and marked skipped, never failed: losing a race is not an error
(the original counted cancelled losers as failures and replanned on them). A racer that failed
before another one won is also just a loser. If every racer fails, each keeps its own error.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from saber.graph.config import GraphConfig
from saber.graph.node import Node, NodeStatus
from saber.graph.outcome import NodeOutcome, RaceOutcome
from saber.graph.retry import seconds_text

RunNode = Callable[[Node], Coroutine[Any, Any, NodeOutcome]]


async def run_race(
    group: str, members: Sequence[Node], run_node: RunNode, config: GraphConfig,
    report: Callable[[RaceOutcome], None],
) -> None:
    """Run ``members`` as a race and ``report`` the outcome the moment it is known; then wait for
    the cancelled losers to unwind (so their ``max_parallel`` slots are free) before returning."""
    waiting = list(members)
    running: dict[asyncio.Task[NodeOutcome], Node] = {}
    started: dict[str, float] = {}
    outcomes: dict[str, NodeOutcome] = {}
    winner: NodeOutcome | None = None
    hedge = config.hedge

    def start_next() -> None:
        node = waiting.pop(0)
        started[node.id] = time.perf_counter()
        running[asyncio.create_task(run_node(node), name=f"saber-race-{group}-{node.id}")] = node

    timed_out = False
    try:
        async with asyncio.timeout(config.race_timeout or None):
            start_next()
            while waiting and hedge is None:
                start_next()
            while running or waiting:
                if not running:
                    start_next()
                wait_for = hedge if (hedge is not None and waiting) else None
                done, _ = await asyncio.wait(running, timeout=wait_for, return_when=asyncio.FIRST_COMPLETED)
                if not done:  # hedging: the racers so far are slow, add the next one
                    start_next()
                    continue
                for task in done:
                    node = running.pop(task)
                    outcome = task.result()
                    outcomes[node.id] = outcome
                    if winner is None and outcome.status is NodeStatus.DONE:
                        winner = outcome
                if winner is not None:
                    break
                if waiting and hedge is not None:  # a racer failed: do not wait out the hedge delay
                    start_next()
    except TimeoutError:
        timed_out = True
    except asyncio.CancelledError:  # the run is being cancelled: take the racers down with us
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        raise
    for task in running:
        task.cancel()

    report(_outcome(group, members, winner, outcomes, started, timed_out, config))
    if running:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*running, return_exceptions=True)


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
