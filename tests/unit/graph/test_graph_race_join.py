"""``Race.join``: members added to a race under way (streamed plans), with and without hedging."""

from __future__ import annotations

import asyncio
import contextlib

from saber.graph import GraphConfig, Node, NodeStatus
from saber.graph.outcome import NodeOutcome, RaceOutcome
from saber.graph.races import Race


class Racers:
    """run_node for the race: each node waits until the test settles it (done or failed)."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.cancelled: list[str] = []
        self.results: dict[str, asyncio.Future[NodeStatus]] = {}
        self.outcomes: list[RaceOutcome] = []
        self.began: dict[str, asyncio.Event] = {}

    def began_event(self, node_id: str) -> asyncio.Event:
        return self.began.setdefault(node_id, asyncio.Event())

    def settle(self, node_id: str, status: NodeStatus) -> None:
        self.results.setdefault(node_id, asyncio.get_running_loop().create_future()).set_result(status)

    async def run_node(self, node: Node) -> NodeOutcome:
        self.started.append(node.id)
        self.began_event(node.id).set()
        future = self.results.setdefault(node.id, asyncio.get_running_loop().create_future())
        try:
            status = await future
        except asyncio.CancelledError:
            self.cancelled.append(node.id)
            raise
        return NodeOutcome(node_id=node.id, status=status, result=node.id if status is NodeStatus.DONE else None,
                           error=None if status is NodeStatus.DONE else "down")


async def settled() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_joined_member_starts_at_once_and_can_win() -> None:
    racers = Racers()
    race = Race("g", [Node(id="r1", tool="a")], racers.run_node, GraphConfig(), racers.outcomes.append)
    running = asyncio.create_task(race.run())
    await settled()
    assert race.join(Node(id="r2", tool="b")) and not race.decided
    await settled()
    assert racers.started == ["r1", "r2"]
    racers.settle("r2", NodeStatus.DONE)
    await running
    [outcome] = racers.outcomes
    assert outcome.winner == "r2" and racers.cancelled == ["r1"]
    assert [(o.node_id, o.status) for o in outcome.outcomes] == [("r2", NodeStatus.DONE), ("r1", NodeStatus.SKIPPED)]
    assert race.decided and not race.join(Node(id="r3", tool="c")), "no member joins a decided race"


async def test_with_hedging_a_joined_member_waits_its_turn_and_starts_when_the_racer_fails() -> None:
    racers = Racers()
    config = GraphConfig(hedge=3600.0)  # never reached: only a failure lets the next one start
    race = Race("g", [Node(id="r1", tool="a")], racers.run_node, config, racers.outcomes.append)
    running = asyncio.create_task(race.run())
    await settled()
    race.join(Node(id="r2", tool="b"))
    await settled()
    assert racers.started == ["r1"], "hedged: the next member waits while the first may still win"
    racers.settle("r1", NodeStatus.FAILED)
    await settled()
    assert racers.started == ["r1", "r2"]
    racers.settle("r2", NodeStatus.DONE)
    await running
    assert racers.outcomes[0].winner == "r2"


async def test_a_race_whose_every_member_failed_reports_each_error() -> None:
    racers = Racers()
    race = Race("g", [Node(id="r1", tool="a")], racers.run_node, GraphConfig(), racers.outcomes.append)
    running = asyncio.create_task(race.run())
    await settled()
    race.join(Node(id="r2", tool="b"))
    await settled()
    racers.settle("r1", NodeStatus.FAILED)
    racers.settle("r2", NodeStatus.FAILED)
    await running
    [outcome] = racers.outcomes
    assert outcome.winner is None and {o.node_id: o.error for o in outcome.outcomes} == {"r1": "down", "r2": "down"}


async def test_two_members_joining_in_one_tick_both_run() -> None:
    racers = Racers()
    race = Race("g", [Node(id="r1", tool="a")], racers.run_node, GraphConfig(), racers.outcomes.append)
    running = asyncio.create_task(race.run())
    await settled()
    assert race.join(Node(id="r2", tool="b")) and race.join(Node(id="r3", tool="c"))
    await settled()
    assert racers.started == ["r1", "r2", "r3"]
    racers.settle("r3", NodeStatus.DONE)
    await running
    assert racers.outcomes[0].winner == "r3" and sorted(racers.cancelled) == ["r1", "r2"]
    losers = [o for o in racers.outcomes[0].outcomes if o.status is NodeStatus.SKIPPED]
    assert [o.node_id for o in losers] == ["r1", "r2"] and all(o.duration_ms > 0 for o in losers), \
        "a loser's time is the time it ran"


async def test_a_hedged_race_whose_members_all_run_waits_for_them_without_another_start() -> None:
    racers = Racers()
    race = Race("g", [Node(id="r1", tool="a"), Node(id="r2", tool="b")], racers.run_node, GraphConfig(hedge=0.01),
                racers.outcomes.append)
    running = asyncio.create_task(race.run())
    await racers.began_event("r2").wait()  # r2 starts once r1 is slower than the hedge delay
    assert racers.started == ["r1", "r2"]
    await asyncio.sleep(0.05)  # several hedge delays pass with nobody left to start
    racers.settle("r2", NodeStatus.DONE)
    await running
    assert racers.outcomes[0].winner == "r2" and racers.cancelled == ["r1"]


async def test_cancelling_a_race_takes_its_racers_down_and_closes_it() -> None:
    racers = Racers()
    race = Race("g", [Node(id="r1", tool="a"), Node(id="r2", tool="b")], racers.run_node, GraphConfig(),
                racers.outcomes.append)
    running = asyncio.create_task(race.run())
    await settled()
    running.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await running
    assert sorted(racers.cancelled) == ["r1", "r2"] and racers.outcomes == []
    assert not race.join(Node(id="r3", tool="c")), "a cancelled race takes no member"


async def test_the_race_returns_only_after_its_losers_have_unwound() -> None:
    unwound = asyncio.Event()
    release = asyncio.Event()

    async def run_node(node: Node) -> NodeOutcome:
        if node.id == "fast":
            return NodeOutcome(node_id=node.id, status=NodeStatus.DONE, result="x")
        try:
            await asyncio.Event().wait()
        finally:
            await release.wait()  # a slow cleanup after its cancel
            unwound.set()
        raise AssertionError("unreachable")

    reported: list[RaceOutcome] = []
    decided = asyncio.Event()

    def report(outcome: RaceOutcome) -> None:
        reported.append(outcome)
        decided.set()

    race = Race("g", [Node(id="slow", tool="a"), Node(id="fast", tool="b")], run_node, GraphConfig(), report)
    running = asyncio.create_task(race.run())
    await decided.wait()
    await settled()
    assert not running.done(), "the outcome is reported at once, but the race waits for its loser's cleanup"
    release.set()
    await running
    assert unwound.is_set() and reported[0].winner == "fast"
