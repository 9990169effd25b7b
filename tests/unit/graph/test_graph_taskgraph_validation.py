"""TaskGraph validation errors, levels and the ready set."""

from __future__ import annotations

import pytest

from saber.graph import GraphError, Node, NodeStatus, TaskGraph


def test_duplicates_missing_dependencies_and_cycles_are_named() -> None:
    with pytest.raises(GraphError, match="duplicate node ids: a"):
        TaskGraph([Node(id="a", tool="t"), Node(id="a", tool="t")])
    with pytest.raises(GraphError, match="a depends on missing node"):
        TaskGraph([Node(id="a", tool="t", depends_on=["zz"])])
    with pytest.raises(GraphError, match=r"cycle: (a -> c -> b -> a|b -> a -> c -> b|c -> b -> a -> c)"):
        TaskGraph([Node(id="a", tool="t", depends_on=["c"]), Node(id="b", tool="t", depends_on=["a"]),
                   Node(id="c", tool="t", depends_on=["b"]), Node(id="d", tool="t")])


def test_levels_and_ready() -> None:
    g = TaskGraph([Node(id="a", tool="t"), Node(id="b", tool="t", depends_on=["a"]), Node(id="c", tool="t"),
                   Node(id="d", tool="t", depends_on=["b", "c"])])
    assert [sorted(level) for level in g.levels()] == [["a", "c"], ["b"], ["d"]]
    assert sorted(g.ready()) == ["a", "c"]
    g["a"].status = NodeStatus.DONE
    assert sorted(g.ready()) == ["b", "c"]
