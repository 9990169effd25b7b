"""GraphState's bookkeeping where mutation testing (mutmut, see pyproject's ``[tool.mutmut]``) found
it unchecked: what a finished node announces, the ready queue going on past a node it must not
launch, a blocked subtree skipped at once, a race group completed by a member's skip, restored
race losers, fresh copies on a replan, and the checks of race groups."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest
from graph_testkit import fn_tool

from saber.events import Event, NodeDone, RaceWon, Step
from saber.graph import GraphConfig, GraphError, GraphRuntime, Node, NodeStatus, TaskGraph
from saber.graph.outcome import NodeOutcome, RaceOutcome
from saber.graph.state import _OBSERVATION_CHARS, GraphState, Launch


class OpenRace:
    def __init__(self) -> None:
        self.offered: list[str] = []

    def join(self, node: Node) -> bool:
        self.offered.append(node.id)
        return True


def launched(launch: list[Launch]) -> list[tuple[str | None, list[str]]]:
    return [(start.race, [n.id for n in start.nodes]) for start in launch]


def echo_tools() -> dict[str, Any]:
    schema = {"type": "object", "properties": {"x": {}}}
    return {"echo": fn_tool("echo", lambda a: a.get("x", "ran"), schema),
            "fail": fn_tool("fail", lambda a: (_ for _ in ()).throw(ValueError("broken")))}


# -- what a finished node announces -----------------------------------------------------------------

def test_a_finished_node_announces_its_tool_duration_attempts_and_error_then_its_observation() -> None:
    state = GraphState(TaskGraph([Node(id="n1", tool="search"), Node(id="n2", tool="fetch"),
                                  Node(id="n3", tool="use", depends_on=["n2"])]), GraphConfig(on_failure="skip"))
    state.settle([], [])
    state.graph["n1"].attempts, state.graph["n2"].attempts = 1, 3  # the worker counts them on the node
    events: list[Event] = []
    state.finish(NodeOutcome(node_id="n1", status=NodeStatus.DONE, result="found it", duration_ms=12.5), [], events)
    state.finish(NodeOutcome(node_id="n2", status=NodeStatus.FAILED, error="HTTP 503", duration_ms=40.0), [], events)
    assert events == [
        NodeDone(id="n1", tool="search", status="done", duration_ms=12.5, attempts=1, error=None),
        Step(kind="observation", content="found it", tool="search", node_id="n1"),
        NodeDone(id="n2", tool="fetch", status="failed", duration_ms=40.0, attempts=3, error="HTTP 503"),
        Step(kind="observation", content="error: HTTP 503", tool="fetch", node_id="n2"),
        # a skipped node has nothing to observe
        NodeDone(id="n3", tool="use", status="skipped", duration_ms=0.0, attempts=0, error="n2 failed: HTTP 503"),
    ]


def observation(result: Any) -> str:
    state = GraphState(TaskGraph([Node(id="n1", tool="t")]), GraphConfig())
    state.settle([], [])
    events: list[Event] = []
    state.finish(NodeOutcome(node_id="n1", status=NodeStatus.DONE, result=result), [], events)
    [step] = [e for e in events if isinstance(e, Step)]
    assert isinstance(step.content, str)
    return step.content


def test_an_observation_is_the_text_itself_or_readable_json() -> None:
    assert observation("plain text") == "plain text"  # not quoted as JSON
    result = {"city": "Zürich", "temp": 21}
    text = observation(result)
    assert json.loads(text) == result and "Zürich" in text  # not \u-escaped


def test_an_observation_writes_an_object_json_does_not_know_as_its_text() -> None:
    # a tool's result keeps such objects (tool_output encodes them with str, so they are safe)
    assert observation({"tags": {"x"}, "when": datetime.date(2026, 12, 4)}) == '{"tags": "{\'x\'}", "when": "2026-12-04"}'


def test_an_observation_of_a_result_json_cannot_encode_falls_back_to_its_json_safe_copy() -> None:
    text = observation({("a", 1): "ü"})  # a tuple key: json.dumps refuses it, default= does not apply to keys
    assert json.loads(text) == {str(("a", 1)): "ü"} and "ü" in text


def test_an_observation_is_cut_only_past_its_limit() -> None:
    exact = "x" * _OBSERVATION_CHARS
    assert observation(exact) == exact
    assert observation(exact + "y") == exact + "…"


# -- the ready queue goes on past a node it does not launch ------------------------------------------

def test_a_skipped_node_left_in_the_ready_queue_does_not_hold_up_the_next_one() -> None:
    state = GraphState(TaskGraph([Node(id="n0", tool="a"), Node(id="n1", tool="a"),
                                  Node(id="n2", tool="b", depends_on=["n1"]), Node(id="n3", tool="b", depends_on=["n0"])]),
                       GraphConfig(on_failure="skip"))
    assert launched(state.settle([], [])) == [(None, ["n0"]), (None, ["n1"])]
    state.finish(NodeOutcome(node_id="n1", status=NodeStatus.FAILED, error="down"), [], [])  # n2: ready, then skipped
    state.finish(NodeOutcome(node_id="n0", status=NodeStatus.DONE, result="ok"), [], [])  # n3: ready after it
    assert launched(state.settle([], [])) == [(None, ["n3"])]


def test_a_blocked_node_is_skipped_and_the_next_ready_one_still_starts() -> None:
    state = GraphState(TaskGraph([Node(id="n1", tool="a")]), GraphConfig(on_failure="skip"))
    state.settle([], [])
    state.finish(NodeOutcome(node_id="n1", status=NodeStatus.FAILED, error="down"), [], [])
    state.add([Node(id="n2", tool="b", depends_on=["n1"]), Node(id="n4", tool="b")])
    assert launched(state.settle([], [])) == [(None, ["n4"])]
    assert state.graph["n2"].status is NodeStatus.SKIPPED


def test_a_member_joining_its_race_does_not_hold_up_the_next_ready_node() -> None:
    state = GraphState(TaskGraph([Node(id="r1", tool="a", race_group="g")]), GraphConfig())
    state.races_may_grow = True
    state.settle([], [])
    race = OpenRace()
    state.race_started("g", race)
    state.add([Node(id="r2", tool="b", race_group="g"), Node(id="n5", tool="c")])
    assert launched(state.settle([], [])) == [(None, ["n5"])] and race.offered == ["r2"]


def test_a_member_held_for_its_group_does_not_hold_up_the_next_ready_node() -> None:
    state = GraphState(TaskGraph([Node(id="r1", tool="a", race_group="g"), Node(id="n0", tool="a"),
                                  Node(id="r2", tool="b", race_group="g", depends_on=["n0"])]), GraphConfig())
    assert launched(state.settle([], [])) == [(None, ["n0"])]
    assert state.graph["r1"].status is NodeStatus.PENDING  # held until r2 is ready too
    state.finish(NodeOutcome(node_id="n0", status=NodeStatus.DONE, result="ok"), [], [])
    assert launched(state.settle([], [])) == [("g", ["r1", "r2"])]


def test_a_member_written_after_its_group_won_loses_to_the_winner() -> None:
    state = GraphState(TaskGraph([Node(id="r1", tool="a", race_group="g")]), GraphConfig())
    state.settle([], [])
    state.finish(NodeOutcome(node_id="r1", status=NodeStatus.DONE, result="won"), [], [])
    state.add([Node(id="r2", tool="b", race_group="g"), Node(id="n3", tool="c", depends_on=["r2"])])
    assert launched(state.settle([], [])) == [(None, ["n3"])]
    assert state.graph["r2"].status is NodeStatus.SKIPPED
    assert state.graph["r2"].error == "lost race 'g' to r1 (decided before this member could start)"
    assert state.inputs(state.graph["n3"]) == {("r2", "b"): "won"}


# -- a failure's subtree ------------------------------------------------------------------------------

def test_a_failure_skips_its_blocked_dependents_at_once_not_when_their_other_inputs_finish() -> None:
    state = GraphState(TaskGraph([Node(id="n1", tool="a"), Node(id="n2", tool="a"),
                                  Node(id="n3", tool="b", depends_on=["n1", "n2"]),
                                  Node(id="n4", tool="b", depends_on=["n3"])]), GraphConfig(on_failure="skip"))
    state.settle([], [])
    state.finish(NodeOutcome(node_id="n1", status=NodeStatus.FAILED, error="down"), [], [])
    assert state.graph["n2"].status is NodeStatus.RUNNING
    assert (state.graph["n3"].status, state.graph["n3"].error) == (NodeStatus.SKIPPED, "n1 failed: down")
    assert (state.graph["n4"].status, state.graph["n4"].error) == (NodeStatus.SKIPPED, "n1 failed: down")


def test_with_on_failure_continue_a_failure_skips_nothing() -> None:
    state = GraphState(TaskGraph([Node(id="n1", tool="a"), Node(id="n2", tool="a"),
                                  Node(id="n3", tool="b", depends_on=["n1", "n2"])]), GraphConfig(on_failure="continue"))
    state.settle([], [])
    state.finish(NodeOutcome(node_id="n1", status=NodeStatus.FAILED, error="down"), [], [])
    assert state.graph["n3"].status is NodeStatus.PENDING
    state.finish(NodeOutcome(node_id="n2", status=NodeStatus.DONE, result="ok"), [], [])
    assert launched(state.settle([], [])) == [(None, ["n3"])]


def test_a_race_member_skipped_for_a_failure_leaves_the_rest_of_its_group_to_start() -> None:
    state = GraphState(TaskGraph([Node(id="n0", tool="a"), Node(id="r1", tool="a", race_group="g"),
                                  Node(id="r2", tool="b", race_group="g", depends_on=["n0"])]), GraphConfig(on_failure="skip"))
    assert launched(state.settle([], [])) == [(None, ["n0"])]  # r1 held for r2
    state.finish(NodeOutcome(node_id="n0", status=NodeStatus.FAILED, error="down"), [], [])
    assert state.graph["r2"].status is NodeStatus.SKIPPED
    assert launched(state.settle([], [])) == [(None, ["r1"])]


async def test_a_race_member_skipped_for_a_failure_does_not_strand_its_group_in_a_run() -> None:
    nodes = [Node(id="n0", tool="fail"), Node(id="r1", tool="echo", params={"x": "r1"}, race_group="g"),
             Node(id="r2", tool="echo", params={"x": "r2"}, race_group="g", depends_on=["n0"])]
    result = await GraphRuntime(nodes, echo_tools(), GraphConfig(max_attempts=1)).run()
    assert result.nodes["r1"].status is NodeStatus.DONE and result.nodes["r1"].result == "r1"
    assert result.nodes["r2"].status is NodeStatus.SKIPPED


# -- a restored graph ---------------------------------------------------------------------------------

def restored_race(**config: Any) -> GraphState:
    return GraphState(TaskGraph([  # the loser first: the winner is whoever is done, not who comes first
        Node(id="r2", tool="b", race_group="g", status=NodeStatus.SKIPPED, error="lost race 'g' to r1"),
        Node(id="r1", tool="a", race_group="g", status=NodeStatus.DONE, result="won"),
        Node(id="n3", tool="c", depends_on=["r2"]),
    ]), GraphConfig(**config))


@pytest.mark.parametrize("racing", [True, False])
def test_a_restored_race_loser_passes_the_winners_result_to_its_dependents(racing: bool) -> None:
    state = restored_race(enable_racing=racing)
    assert launched(state.settle([], [])) == [(None, ["n3"])]  # not skipped as if r2 had failed
    assert state.inputs(state.graph["n3"]) == {("r2", "b"): "won"}


@pytest.mark.parametrize("racing", [True, False])
async def test_a_restored_member_skipped_because_its_input_failed_is_no_loser(racing: bool) -> None:
    """It did not lose a race (it never ran): its dependents are skipped as in the run that saved it,
    not handed a sibling's result."""
    nodes = [Node(id="n0", tool="fail", status=NodeStatus.FAILED, error="down"),
             Node(id="r1", tool="echo", params={"x": "r1"}, race_group="g", status=NodeStatus.DONE, result="r1"),
             Node(id="r2", tool="echo", race_group="g", depends_on=["n0"], status=NodeStatus.SKIPPED,
                  error="skipped: n0 failed"),
             Node(id="n3", tool="echo", params={"x": "$r2"}, depends_on=["r2"])]
    result = await GraphRuntime(nodes, echo_tools(), GraphConfig(enable_racing=racing)).run()
    assert result.nodes["n3"].status is NodeStatus.SKIPPED and result.nodes["n3"].result is None


async def test_a_resumed_run_after_a_race_gives_the_losers_dependent_the_winners_result() -> None:
    nodes = [Node(id="r1", tool="echo", race_group="g", status=NodeStatus.DONE, result="won"),
             Node(id="r2", tool="echo", race_group="g", status=NodeStatus.SKIPPED, error="lost race 'g' to r1"),
             Node(id="n3", tool="echo", params={"x": "$r2"}, depends_on=["r2"])]
    result = await GraphRuntime(nodes, echo_tools(), GraphConfig()).run()
    assert result.nodes["n3"].status is NodeStatus.DONE and result.nodes["n3"].result == "won"


def test_a_restored_failed_member_keeps_its_error_though_a_later_member_won() -> None:
    state = GraphState(TaskGraph([
        Node(id="r1", tool="a", race_group="g", status=NodeStatus.FAILED, error="down"),
        Node(id="r3", tool="b", race_group="g", status=NodeStatus.DONE, result="late win"),  # a race of its own
        Node(id="n4", tool="c", depends_on=["r1"]),
    ]), GraphConfig(on_failure="continue"))
    assert launched(state.settle([], [])) == [(None, ["n4"])]
    assert state.inputs(state.graph["n4"]) == {("r1", "a"): {"error": "down", "status": "failed"}}


async def test_a_node_saved_while_running_runs_again_when_the_graph_is_restored() -> None:
    nodes = [Node(id="n1", tool="echo", params={"x": "again"}, status=NodeStatus.RUNNING, attempts=1)]
    state = GraphState(TaskGraph([Node.from_dict(nodes[0].to_dict())]), GraphConfig())
    assert launched(state.settle([], [])) == [(None, ["n1"])]
    result = await GraphRuntime(nodes, echo_tools(), GraphConfig()).run()
    assert result.nodes["n1"].status is NodeStatus.DONE and result.nodes["n1"].result == "again"


# -- a replan's nodes ---------------------------------------------------------------------------------

def test_a_replans_nodes_are_added_as_fresh_pending_copies() -> None:
    state = GraphState(TaskGraph([Node(id="n1", tool="a")]), GraphConfig())
    old = Node(id="n2", tool="b", status=NodeStatus.FAILED, result="stale", error="boom", attempts=2, duration_ms=5.0)
    assert state.add([old]) == ["n2"]
    new = state.graph["n2"]
    assert new is not old and old.status is NodeStatus.FAILED  # the caller's node is left alone
    assert (new.status, new.result, new.error, new.attempts, new.duration_ms) == (NodeStatus.PENDING, None, None, 0, 0.0)
    assert (None, ["n2"]) in launched(state.settle([], []))


# -- race groups that could never start -----------------------------------------------------------------

def test_a_member_waiting_on_its_own_group_through_a_plain_node_is_rejected() -> None:
    nodes = [Node(id="r1", tool="a", race_group="g"), Node(id="n1", tool="a", depends_on=["r1"]),
             Node(id="r2", tool="a", race_group="g", depends_on=["n1"])]
    with pytest.raises(GraphError, match="race group 'g': r2 depends on r1 of the same group"):
        GraphState(TaskGraph(nodes), GraphConfig())


def test_plain_nodes_on_both_sides_of_a_race_group_are_no_cycle() -> None:
    nodes = [Node(id="r1", tool="a", race_group="g"), Node(id="after", tool="a", depends_on=["r1"]),
             Node(id="before", tool="a"), Node(id="r2", tool="a", race_group="g", depends_on=["before"])]
    state = GraphState(TaskGraph(nodes), GraphConfig())
    assert launched(state.settle([], [])) == [(None, ["before"])]


def test_a_cycle_between_race_groups_names_the_plain_nodes_on_it_and_says_why() -> None:
    nodes = [Node(id="a1", tool="t", race_group="g1"), Node(id="a2", tool="t", race_group="g1", depends_on=["p1"]),
             Node(id="p1", tool="t", depends_on=["b1"]),
             Node(id="b1", tool="t", race_group="g2"), Node(id="b2", tool="t", race_group="g2", depends_on=["p2"]),
             Node(id="p2", tool="t", depends_on=["a1"])]
    with pytest.raises(GraphError) as raised:
        GraphState(TaskGraph(nodes), GraphConfig())
    message = str(raised.value)
    assert "node p1" in message and "node p2" in message and " g1 " in f" {message} "
    assert message.endswith("(a race group starts only when every member is ready)")


# -- race outcomes, stranded and cancelled nodes ----------------------------------------------------------

def test_race_won_names_the_group_the_winners_tool_and_the_losers() -> None:
    state = GraphState(TaskGraph([Node(id="r1", tool="web", race_group="g"), Node(id="r2", tool="kb", race_group="g")]),
                       GraphConfig())
    state.settle([], [])
    events: list[Event] = []
    state.finish_race(RaceOutcome(group="g", winner="r2", outcomes=[
        NodeOutcome(node_id="r2", status=NodeStatus.DONE, result="kb says"),
        NodeOutcome(node_id="r1", status=NodeStatus.SKIPPED, error="lost race 'g' to r2")]), [], events)
    assert [e for e in events if isinstance(e, RaceWon)] == [RaceWon(race_group="g", winner="r2", tool="kb", losers=["r1"])]

    lone = GraphState(TaskGraph([Node(id="r1", tool="web", race_group="g")]), GraphConfig())
    lone.races_may_grow = True
    lone.settle([], [])
    events = []
    lone.finish_race(RaceOutcome(group="g", winner="r1", outcomes=[
        NodeOutcome(node_id="r1", status=NodeStatus.DONE, result="x")]), [], events)
    assert [e for e in events if isinstance(e, RaceWon)] == [RaceWon(race_group="g", winner="r1", tool="web", losers=[])]


def two_nodes_one_running() -> GraphState:
    state = GraphState(TaskGraph([Node(id="n1", tool="a"), Node(id="n2", tool="b", depends_on=["n1"])]), GraphConfig())
    state.settle([], [])
    state.graph["n1"].attempts = 2
    return state


def test_stranded_nodes_fail_with_the_error_and_are_announced_finished() -> None:
    state = two_nodes_one_running()
    changed: list[Node] = []
    events: list[Event] = []
    assert state.fail_stranded("drained", changed, events) == ["n1", "n2"]
    assert state.running == set() and state.finished_order[-2:] == ["n1", "n2"]
    assert changed == [state.graph["n1"], state.graph["n2"]]
    assert events == [NodeDone(id="n1", tool="a", status="failed", duration_ms=0.0, attempts=2, error="drained"),
                      NodeDone(id="n2", tool="b", status="failed", duration_ms=0.0, attempts=0, error="drained")]


def test_cancelling_the_rest_says_which_nodes_were_running() -> None:
    state = two_nodes_one_running()
    changed: list[Node] = []
    events: list[Event] = []
    state.cancel_rest(changed, events)
    assert state.running == set() and changed == [state.graph["n1"], state.graph["n2"]]
    assert events == [
        NodeDone(id="n1", tool="a", status="cancelled", duration_ms=0.0, attempts=2, error="cancelled while running"),
        NodeDone(id="n2", tool="b", status="cancelled", duration_ms=0.0, attempts=0, error="cancelled"),
    ]


def test_race_members_above_a_deep_lattice_of_dependencies_are_checked_without_walking_every_path() -> None:
    # 40 layers of two nodes, each depending on both below: 2**40 paths down from the race members
    nodes = [Node(id="a0", tool="t"), Node(id="b0", tool="t")]
    for i in range(1, 40):
        below = [f"a{i - 1}", f"b{i - 1}"]
        nodes += [Node(id=f"a{i}", tool="t", depends_on=below), Node(id=f"b{i}", tool="t", depends_on=below)]
    nodes += [Node(id=f"r{k}", tool="t", race_group="g", depends_on=["a39", "b39"]) for k in (1, 2)]
    state = GraphState(TaskGraph(nodes), GraphConfig())
    assert launched(state.settle([], [])) == [(None, ["a0"]), (None, ["b0"])]
