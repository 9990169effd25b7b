"""TaskGraph: validation with precise errors, levels, ready set."""

from __future__ import annotations

import pytest

from saber.graph import GraphError, Node, NodeStatus, TaskGraph


def n(node_id: str, *deps: str) -> Node:
    return Node(id=node_id, tool="t", depends_on=list(deps))


def test_levels_and_ready() -> None:
    g = TaskGraph([n("a"), n("b"), n("c", "a"), n("d", "c", "b")])
    assert g.levels() == [["a", "b"], ["c"], ["d"]]
    assert g.ready() == ["a", "b"]
    g["a"].status = NodeStatus.DONE
    assert g.ready() == ["b", "c"]


def test_duplicate_ids() -> None:
    with pytest.raises(GraphError, match="duplicate node ids: a"):
        TaskGraph([n("a"), n("a")])


def test_missing_dependency() -> None:
    with pytest.raises(GraphError, match="node b depends on missing node"):
        TaskGraph([n("a"), n("b", "zz")])


def test_cycle_names_its_path() -> None:
    with pytest.raises(GraphError) as info:
        TaskGraph([n("a", "c"), n("b", "a"), n("c", "b"), n("d")])
    message = str(info.value)
    assert message.startswith("cycle: ")
    path = message.removeprefix("cycle: ").split(" -> ")
    assert path[0] == path[-1] and sorted(path[:-1]) == ["a", "b", "c"]


def test_self_dependency() -> None:
    with pytest.raises(GraphError, match="depends on itself"):
        TaskGraph([n("a", "a")])


def test_add_validates_and_rolls_back() -> None:
    g = TaskGraph([n("a")])
    with pytest.raises(GraphError):
        g.add([n("b", "missing")])
    assert list(g.nodes) == ["a"]
    g.add([n("b", "a")])
    assert g.levels() == [["a"], ["b"]]


def test_node_round_trip_and_sub_agent_inference() -> None:
    node = Node(id="n1", agent="writer_agent", goal="write", depends_on=["n0"])
    assert node.type == "sub_agent" and node.target == "writer_agent"
    assert Node.from_dict(node.to_dict()) == node
