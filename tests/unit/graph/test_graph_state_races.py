"""GraphState's race bookkeeping while a plan streams: members joining a race under way, and
members that arrive in the window between a race's decision and its outcome being applied."""

from __future__ import annotations

import pytest

from saber.events import Event
from saber.graph import GraphConfig, Node, NodeStatus, TaskGraph
from saber.graph.outcome import NodeOutcome, RaceOutcome
from saber.graph.state import GraphState, Launch
from saber.graph.taskgraph import GraphError


class DecidedRace:
    """A race whose outcome is known but not yet applied: it refuses every member."""

    def __init__(self) -> None:
        self.offered: list[str] = []

    def join(self, node: Node) -> bool:
        self.offered.append(node.id)
        return False


class OpenRace(DecidedRace):
    def join(self, node: Node) -> bool:
        self.offered.append(node.id)
        return True


def streaming_state() -> tuple[GraphState, list[Launch]]:
    state = GraphState(TaskGraph([Node(id="r1", tool="a", race_group="g")]), GraphConfig())
    state.races_may_grow = True
    return state, state.settle([], [])


def test_a_lone_member_of_a_growing_group_starts_as_a_race() -> None:
    state, launch = streaming_state()
    assert launch == [Launch([state.graph["r1"]], race="g")]
    state.races_may_grow = False
    state.add([Node(id="x", tool="a", race_group="h")])
    assert state.settle([], []) == [Launch([state.graph["x"]], race=None)]  # the plan is complete: a plain node


def test_a_member_ready_while_its_race_runs_joins_it() -> None:
    state, _ = streaming_state()
    race = OpenRace()
    state.race_started("g", race)
    state.add([Node(id="r2", tool="b", race_group="g")])
    assert state.settle([], []) == [] and race.offered == ["r2"]
    assert state.graph["r2"].status is NodeStatus.RUNNING and "r2" in state.running


def test_a_member_refused_by_a_won_race_loses_when_the_outcome_arrives() -> None:
    state, _ = streaming_state()
    race = DecidedRace()
    state.race_started("g", race)
    state.add([Node(id="r2", tool="b", race_group="g"), Node(id="n3", tool="c", depends_on=["r2"])])
    assert state.settle([], []) == [] and race.offered == ["r2"]
    assert state.graph["r2"].status is NodeStatus.PENDING  # parked until the outcome is applied
    events: list[Event] = []
    state.finish_race(RaceOutcome(group="g", winner="r1", outcomes=[
        NodeOutcome(node_id="r1", status=NodeStatus.DONE, result="won")]), [], events)
    assert state.graph["r2"].status is NodeStatus.SKIPPED
    assert state.graph["r2"].error == "lost race 'g' to r1 (decided before this member could start)"
    assert [launch.nodes[0].id for launch in state.settle([], [])] == ["n3"]
    assert state.inputs(state.graph["n3"]) == {("r2", "b"): "won"}  # a loser's dependents get the winner's result


def test_a_member_refused_by_a_race_every_racer_lost_starts_a_race_of_its_own() -> None:
    state, _ = streaming_state()
    state.race_started("g", DecidedRace())
    state.add([Node(id="r2", tool="b", race_group="g")])
    assert state.settle([], []) == []
    state.finish_race(RaceOutcome(group="g", winner=None, outcomes=[
        NodeOutcome(node_id="r1", status=NodeStatus.FAILED, error="down")]), [], [])
    assert state.settle([], []) == [Launch([state.graph["r2"]], race="g")]
    assert state.graph["r2"].status is NodeStatus.RUNNING


def test_a_member_still_waiting_on_a_dependency_loses_as_soon_as_the_race_is_won() -> None:
    state = GraphState(TaskGraph([Node(id="n0", tool="a"), Node(id="r1", tool="a", race_group="g"),
                                  Node(id="r2", tool="b", race_group="g", depends_on=["n0"])]), GraphConfig())
    state.races_may_grow = True
    launch = state.settle([], [])
    assert sorted((start.race or "", [n.id for n in start.nodes]) for start in launch) == [("", ["n0"]), ("g", ["r1"])]
    state.race_started("g", OpenRace())
    state.finish_race(RaceOutcome(group="g", winner="r1", outcomes=[
        NodeOutcome(node_id="r1", status=NodeStatus.DONE, result="won")]), [], [])
    assert state.graph["r2"].status is NodeStatus.SKIPPED and state.graph["n0"].status is NodeStatus.RUNNING


def test_a_race_every_member_lost_reports_them_failed_and_announces_no_winner() -> None:
    state = GraphState(TaskGraph([Node(id="r1", tool="a", race_group="g"), Node(id="r2", tool="b", race_group="g"),
                                  Node(id="n3", tool="c", depends_on=["r1"])]), GraphConfig(on_failure="continue"))
    [launch] = state.settle([], [])
    assert launch.race == "g" and [n.id for n in launch.nodes] == ["r1", "r2"]
    events: list[Event] = []
    failed = state.finish_race(RaceOutcome(group="g", winner=None, outcomes=[
        NodeOutcome(node_id="r1", status=NodeStatus.FAILED, error="down", duration_ms=12.5),
        NodeOutcome(node_id="r2", status=NodeStatus.FAILED, error="also down")]), [], events)
    assert [n.id for n in failed] == ["r1", "r2"], "the runtime replans on these"
    assert not [e for e in events if e.type == "race_won"]
    assert state.graph["r1"].duration_ms == 12.5
    assert state.inputs(state.graph["n3"]) == {("r1", "a"): {"error": "down", "status": "failed"}}


def test_a_lone_racer_that_wins_is_announced_with_no_losers() -> None:
    state, _ = streaming_state()
    events: list[Event] = []
    state.finish_race(RaceOutcome(group="g", winner="r1", outcomes=[
        NodeOutcome(node_id="r1", status=NodeStatus.DONE, result="x")]), [], events)
    [won] = [e for e in events if e.type == "race_won"]
    assert won.data["winner"] == "r1" and won.data["losers"] == []


def test_a_node_added_after_its_dependency_failed_is_skipped_not_run() -> None:
    state = GraphState(TaskGraph([Node(id="n1", tool="a")]), GraphConfig(on_failure="skip"))
    state.settle([], [])
    state.finish(NodeOutcome(node_id="n1", status=NodeStatus.FAILED, error="down"), [], [])
    state.add([Node(id="n2", tool="b", depends_on=["n1"]), Node(id="n3", tool="b", depends_on=["n2"])])
    assert state.settle([], []) == []
    assert state.graph["n2"].status is NodeStatus.SKIPPED and state.graph["n2"].error == "n1 failed: down"
    assert state.graph["n3"].status is NodeStatus.SKIPPED


def test_a_node_added_after_its_dependency_was_cancelled_is_skipped() -> None:
    state = GraphState(TaskGraph([Node(id="n1", tool="a")]), GraphConfig(on_failure="continue"))
    state.settle([], [])
    state.cancel_rest([], [])
    state.add([Node(id="n2", tool="b", depends_on=["n1"])])
    assert state.settle([], []) == [] and state.graph["n2"].status is NodeStatus.SKIPPED
    assert state.graph["n2"].error == "cancelled while running"


def test_an_invalid_addition_changes_nothing() -> None:
    state = GraphState(TaskGraph([Node(id="r1", tool="a", race_group="g"), Node(id="n0", tool="a")]), GraphConfig())
    bad = [Node(id="r2", tool="b", race_group="g", depends_on=["r1"])]  # a member waiting on its own group
    with pytest.raises(GraphError, match="depends on r1 of the same group"):
        state.add(bad)
    assert "r2" not in state.graph.nodes
    assert sorted((launch.race or "", [n.id for n in launch.nodes]) for launch in state.settle([], [])) \
        == [("", ["n0"]), ("", ["r1"])], "the group is as it was: r1 alone, not waiting for r2"
