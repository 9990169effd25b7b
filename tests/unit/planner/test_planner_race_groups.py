"""Validation leaves only race groups the graph runtime accepts and can run to the end.

A member may not depend (directly or through other nodes) on another member of its group, and
groups may not depend on each other in a cycle (each group launches only when all its members
are ready, so such a cycle waits forever).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from saber.graph import GraphRuntime, Node, NodeStatus
from saber.planner import PlanParseError, parse_plan
from saber.tools import Tool


async def _echo(args: dict[str, Any]) -> Any:
    return f"result for {args}"


Q = {"properties": {"query": {"type": "string"}}, "required": ["query"]}
TOOLS = {name: Tool.from_json_schema(name, name, Q, _echo) for name in ("search_web", "rag_search", "news", "wiki")}


def _node(node_id: str, tool: str, group: str | None, deps: Iterable[str] = (), query: str = "q") -> dict[str, Any]:
    return {"id": node_id, "type": "tool", "tool": tool, "params": {"query": query},
            "depends_on": list(deps), "race_group": group}


def _groups(nodes: list[Node]) -> dict[str, str | None]:
    return {n.id: n.race_group for n in nodes}


def _contracted_cycle(nodes: list[Node]) -> bool:
    """True when the graph with each race group contracted to one vertex has a cycle."""
    vertex = {n.id: f"group:{n.race_group}" if n.race_group else n.id for n in nodes}
    edges: dict[str, set[str]] = {}
    for n in nodes:
        for dep in n.depends_on:
            if vertex[dep] != vertex[n.id]:
                edges.setdefault(vertex[n.id], set()).add(vertex[dep])
    state: dict[str, int] = {}

    def visit(v: str) -> bool:
        state[v] = 1
        for w in edges.get(v, ()):
            if state.get(w) == 1 or (w not in state and visit(w)):
                return True
        state[v] = 2
        return False

    return any(v not in state and visit(v) for v in set(vertex.values()))


def test_a_refine_step_tagged_with_its_source_group_leaves_the_group() -> None:
    text = json.dumps([_node("n1", "search_web", "search"), _node("n2", "rag_search", "search", query="$n1")])
    parsed = parse_plan(text, TOOLS)
    assert _groups(parsed.nodes) == {"n1": "search", "n2": None}
    assert parsed.nodes[1].depends_on == ["n1"]
    assert any("n2" in w and "'search'" in w and "n1" in w for w in parsed.warnings), parsed.warnings
    GraphRuntime(parsed.nodes, TOOLS)


def test_a_member_depending_on_its_group_through_another_node_leaves_the_group() -> None:
    text = json.dumps([_node("n1", "search_web", "g"), _node("n2", "news", None, ["n1"]),
                       _node("n3", "rag_search", "g", ["n2"]), _node("n4", "wiki", "g")])
    parsed = parse_plan(text, TOOLS)
    assert _groups(parsed.nodes) == {"n1": "g", "n2": None, "n3": None, "n4": "g"}
    assert any("n3" in w and "'g'" in w for w in parsed.warnings), parsed.warnings
    GraphRuntime(parsed.nodes, TOOLS)


def test_independent_members_keep_their_group() -> None:
    text = json.dumps([_node("n1", "news", None), _node("n2", "search_web", "search", ["n1"]),
                       _node("n3", "rag_search", "search", ["n1"])])
    parsed = parse_plan(text, TOOLS)
    assert _groups(parsed.nodes) == {"n1": None, "n2": "search", "n3": "search"}
    assert not any("race group" in w for w in parsed.warnings)


async def test_groups_depending_on_each_other_are_untangled_and_the_plan_runs_to_the_end() -> None:
    # g1 = {A, B}, g2 = {C, D}; B needs C and D needs A: each group waits for the other
    text = json.dumps([_node("A", "search_web", "g1"), _node("B", "rag_search", "g1", ["C"]),
                       _node("C", "news", "g2"), _node("D", "wiki", "g2", ["A"])])
    parsed = parse_plan(text, TOOLS)
    assert not _contracted_cycle(parsed.nodes)
    cleared = [n.id for n in parsed.nodes if n.race_group is None]
    assert cleared in (["A", "B"], ["C", "D"])
    assert any("race group" in w and "cycle" in w for w in parsed.warnings), parsed.warnings
    runtime = GraphRuntime(parsed.nodes, TOOLS)
    await runtime.run()
    assert all(n.status in (NodeStatus.DONE, NodeStatus.SKIPPED) for n in runtime.graph), \
        {n.id: n.status.value for n in runtime.graph}


def test_a_replan_node_may_not_join_the_group_of_a_node_it_depends_on() -> None:
    existing = {"n1": Node(id="n1", tool="search_web", params={"query": "q"}, race_group="search"),
                "n2": Node(id="n2", tool="rag_search", params={"query": "q"}, race_group="search")}
    text = json.dumps([_node("n3", "wiki", "search", query="more on $n1")])
    parsed = parse_plan(text, TOOLS, existing=existing)
    assert [(n.id, n.depends_on, n.race_group) for n in parsed.nodes] == [("n3", ["n1"], None)]
    GraphRuntime([*existing.values(), *parsed.nodes], TOOLS)


_IDS = [f"n{i}" for i in range(1, 7)]
_FORMS = ["${}", "${{{}}}", "{{{{{}}}}}"]


@st.composite
def _plans(draw: st.DrawFn) -> str:
    count = draw(st.integers(min_value=1, max_value=6))
    ids = _IDS[:count]
    nodes = []
    for node_id in ids:
        refs = draw(st.lists(st.sampled_from(ids), max_size=2))
        deps = draw(st.lists(st.sampled_from([*ids, "n9", "1", 2]), max_size=3))
        amount = draw(st.sampled_from(["", "under $1", "$2 off"]))
        query = " ".join(["q", amount, *(draw(st.sampled_from(_FORMS)).format(r) for r in refs)])
        nodes.append({"id": node_id, "tool": draw(st.sampled_from([*TOOLS, "nope"])), "params": {"query": query},
                      "depends_on": deps, "race_group": draw(st.sampled_from([None, "", "a", "b", "search"]))})
    return json.dumps(nodes)


@st.composite
def _cross_group_plans(draw: st.DrawFn) -> str:
    """Every node in a group, depending only on nodes of other groups: groups waiting for each
    other in a cycle are common here, rare in ``_plans``."""
    count = draw(st.integers(min_value=2, max_value=6))
    ids = _IDS[:count]
    group = {node_id: draw(st.sampled_from(["a", "b", "c"])) for node_id in ids}
    nodes = []
    for node_id in ids:
        others = [i for i in ids if group[i] != group[node_id]]
        deps = draw(st.lists(st.sampled_from(others), max_size=2, unique=True)) if others else []
        nodes.append({"id": node_id, "tool": "search_web", "params": {"query": "q"}, "depends_on": deps,
                      "race_group": group[node_id]})
    return json.dumps(nodes)


@settings(max_examples=400, deadline=None)
@given(st.one_of(_plans(), _cross_group_plans()))
def test_every_parsed_plan_builds_a_runtime(text: str) -> None:
    try:
        parsed = parse_plan(text, TOOLS)
    except PlanParseError:
        return
    GraphRuntime(parsed.nodes, TOOLS)  # raises GraphError on a malformed race group
    assert not _contracted_cycle(parsed.nodes), [(n.id, n.depends_on, n.race_group) for n in parsed.nodes]
