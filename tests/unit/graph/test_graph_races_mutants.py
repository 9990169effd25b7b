"""``Race`` on its own, where mutation testing (mutmut, see pyproject's ``[tool.mutmut]``) found it
unchecked: a member joining before the race runs, what racers' tasks are called, racers unwound
before ``run()`` ends (cancelled or decided), and how long each loser is said to have run (a fake
clock: no timing in these tests)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from graph_testkit import until

from saber.graph import GraphConfig, Node, NodeStatus
from saber.graph import races as races_module
from saber.graph.outcome import NodeOutcome, RaceOutcome
from saber.graph.races import Race


class Racers:
    """``run_node`` for a race: each member waits for the test, and unwinds a cancel in
    ``unwind_steps[id]`` loop turns (a racer closing a connection, say)."""

    def __init__(self, *, unwind_steps: dict[str, int] | None = None) -> None:
        self.unwind_steps = unwind_steps or {}
        self.started: dict[str, asyncio.Event] = {}
        self.outcome: dict[str, asyncio.Future[NodeOutcome]] = {}
        self.unwound: list[str] = []
        self.task_names: list[str] = []

    def started_event(self, node_id: str) -> asyncio.Event:
        return self.started.setdefault(node_id, asyncio.Event())

    def finish(self, node_id: str, status: NodeStatus = NodeStatus.DONE, **fields: object) -> None:
        self.future(node_id).set_result(NodeOutcome(node_id=node_id, status=status, **fields))  # type: ignore[arg-type]

    def future(self, node_id: str) -> asyncio.Future[NodeOutcome]:
        if node_id not in self.outcome:
            self.outcome[node_id] = asyncio.get_running_loop().create_future()
        return self.outcome[node_id]

    async def run_node(self, node: Node) -> NodeOutcome:
        task = asyncio.current_task()
        assert task is not None
        self.task_names.append(task.get_name())
        self.started_event(node.id).set()
        try:
            return await asyncio.shield(self.future(node.id))
        except asyncio.CancelledError:
            for _ in range(self.unwind_steps.get(node.id, 0)):
                await asyncio.sleep(0)
            self.unwound.append(node.id)
            raise


def members(*ids: str) -> list[Node]:
    return [Node(id=i, tool="t", race_group="g") for i in ids]


async def test_a_member_may_join_before_the_race_has_begun_to_run() -> None:
    racers = Racers()
    reports: list[RaceOutcome] = []
    a, b = members("a", "b")
    race = Race("g", [a], racers.run_node, GraphConfig(), reports.append)
    assert race.join(b) is True
    run = asyncio.create_task(race.run())
    await until(racers.started_event("b"), run)
    racers.finish("b", result="b won")
    await run
    assert [r.winner for r in reports] == ["b"] and race.members == [a, b]


async def test_racers_run_in_tasks_named_after_their_group_and_node() -> None:
    racers = Racers()
    race = Race("g", members("a"), racers.run_node, GraphConfig(), lambda outcome: None)
    run = asyncio.create_task(race.run())
    await until(racers.started_event("a"), run)
    racers.finish("a")
    await run
    assert racers.task_names == ["saber-race-g-a"]  # what the runtime's leak checks look for ("saber-")


async def test_a_cancelled_race_takes_its_racers_down_and_waits_until_they_unwound() -> None:
    racers = Racers(unwind_steps={"a": 0, "b": 20})
    reports: list[RaceOutcome] = []
    run = asyncio.create_task(Race("g", members("a", "b"), racers.run_node, GraphConfig(), reports.append).run())
    await until(racers.started_event("a"), run)
    await until(racers.started_event("b"), run)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert sorted(racers.unwound) == ["a", "b"]  # b's slow unwinding was waited for
    assert reports == []  # a cancelled race has no outcome


async def test_a_decided_race_reports_then_waits_for_its_cancelled_losers_to_unwind() -> None:
    racers = Racers(unwind_steps={"b": 0, "c": 20})
    reports: list[RaceOutcome] = []
    run = asyncio.create_task(Race("g", members("a", "b", "c"), racers.run_node, GraphConfig(), reports.append).run())
    for node_id in "abc":
        await until(racers.started_event(node_id), run)
    racers.finish("a", result="a won")
    await run
    assert [r.winner for r in reports] == ["a"]
    assert sorted(racers.unwound) == ["b", "c"]  # their max_parallel slots are free once run() returns


async def test_a_race_cancelled_while_its_losers_unwind_ends_quietly_having_reported_once() -> None:
    racers = Racers(unwind_steps={"b": 1000})
    reported = asyncio.Event()
    reports: list[RaceOutcome] = []

    def report(outcome: RaceOutcome) -> None:
        reports.append(outcome)
        reported.set()

    run = asyncio.create_task(Race("g", members("a", "b"), racers.run_node, GraphConfig(), report).run())
    await until(racers.started_event("b"), run)
    racers.finish("a")
    await until(reported, run)
    run.cancel()  # b is still unwinding: the outcome is out, so the race just stops waiting for it
    assert await asyncio.gather(run, return_exceptions=True) == [None]
    assert [r.winner for r in reports] == ["a"]


class FakeClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def perf_counter(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock(100.0)
    monkeypatch.setattr(races_module, "time", SimpleNamespace(perf_counter=fake.perf_counter))
    return fake


async def test_a_loser_has_run_from_its_start_until_the_race_was_decided(clock: FakeClock) -> None:
    racers = Racers()
    reports: list[RaceOutcome] = []
    run = asyncio.create_task(Race("g", members("a", "b"), racers.run_node, GraphConfig(), reports.append).run())
    await until(racers.started_event("a"), run)
    await until(racers.started_event("b"), run)
    clock.now = 100.5
    racers.finish("b", result="b won", duration_ms=7.0)
    await run
    [outcome] = reports
    assert outcome.outcomes == [
        NodeOutcome(node_id="b", status=NodeStatus.DONE, result="b won", duration_ms=7.0),  # its own report
        NodeOutcome(node_id="a", status=NodeStatus.SKIPPED, error="lost race 'g' to b", duration_ms=500.0),
    ]


async def test_a_hedged_member_never_started_has_run_for_no_time(clock: FakeClock) -> None:
    racers = Racers()
    reports: list[RaceOutcome] = []
    run = asyncio.create_task(Race("g", members("a", "b"), racers.run_node, GraphConfig(hedge=60.0),
                                   reports.append).run())
    await until(racers.started_event("a"), run)
    clock.now = 101.0
    racers.finish("a")
    await run
    assert "b" not in racers.started
    assert reports[0].outcomes[1] == NodeOutcome(node_id="b", status=NodeStatus.SKIPPED, error="lost race 'g' to a",
                                                 duration_ms=0.0)


async def test_a_timed_out_racer_has_run_until_the_time_limit(clock: FakeClock) -> None:
    racers = Racers()
    reports: list[RaceOutcome] = []
    run = asyncio.create_task(Race("g", members("a"), racers.run_node, GraphConfig(race_timeout=0.01),
                                   reports.append).run())
    await until(racers.started_event("a"), run)
    clock.now = 100.01
    await run  # the racer never answers: the race's own time limit ends it
    assert reports[0].winner is None
    [timed_out] = reports[0].outcomes
    assert (timed_out.status, timed_out.error) == (NodeStatus.FAILED, "race group 'g' timed out after 10 ms")
    assert timed_out.duration_ms == pytest.approx((100.01 - 100.0) * 1000.0)
