"""Plan validation as a user of the plan meets it: whatever a model writes, what comes out runs
(unique ids, every dependency a kept node, no cycle, arguments the tool accepts), and every node
that was dropped or changed is reported with the reason."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from saber.graph import Node, TaskGraph
from saber.planner.validate import norm_id, validate_nodes
from saber.tools import Tool


def _noop(args: dict[str, Any]) -> Any:
    raise AssertionError


TOOLS = {
    "search_web": Tool.from_json_schema("search_web", "Search", {"properties": {"query": {"type": "string"}},
                                                                 "required": ["query"]}, _noop),
    "get_weather": Tool.from_json_schema(
        "get_weather", "Weather", {"properties": {"city": {"type": "string"}, "days": {"type": "integer"},
                                                  "unit": {"enum": ["c", "f"]}}, "required": ["city"]}, _noop),
    "strict": Tool.from_json_schema("strict", "S", {"properties": {"n": {"type": "integer"}}, "required": ["n"],
                                                    "additionalProperties": False}, _noop),
}
AGENTS = {"research_agent": "researches"}


def check(raw: list[dict[str, Any]], **kwargs: Any) -> tuple[dict[str, Node], list[str], dict[str, str]]:
    out = validate_nodes(raw, TOOLS, agents=AGENTS, **kwargs)
    return {n.id: n for n in out.nodes}, out.warnings, out.dropped


ids = st.one_of(st.none(), st.integers(0, 6), st.sampled_from(["n1", "n2", "n3", "$n2", "{n3}", "x", "", " n1 "]))
refs = st.sampled_from(["$n1", "${n2}", "{{n3}}", "${n4.city}", "$1", "Paris", "${n9}", "under $500"])
raw_nodes = st.fixed_dictionaries({
    "id": ids,
    "tool": st.sampled_from(["search_web", "get_weather", "strict", "nope", None, " search_web "]),
    "params": st.one_of(st.none(), st.dictionaries(st.sampled_from(["query", "city", "days", "n", "extra"]),
                                                   st.one_of(refs, st.integers(-3, 30), st.just("3")), max_size=3)),
    "depends_on": st.one_of(st.none(), st.lists(ids, max_size=3), st.just("n1, n2")),
    "race_group": st.one_of(st.none(), st.sampled_from(["g", "", " g ", True])),
})


@settings(max_examples=150, deadline=None)
@given(st.lists(raw_nodes, max_size=6))
def test_whatever_a_model_writes_the_kept_nodes_form_a_graph_that_runs(raw: list[dict[str, Any]]) -> None:
    out = validate_nodes(raw, TOOLS, agents=AGENTS, placeholders=True)
    kept = [n.id for n in out.nodes]
    assert len(kept) == len(set(kept))
    TaskGraph(out.nodes)  # raises on a dangling dependency, a duplicate id or a cycle
    for node in out.nodes:
        assert node.tool in TOOLS and node.id not in out.dropped
        assert set(node.depends_on) <= set(kept) and node.id not in node.depends_on
        if not any("${" in str(v) for v in node.params.values()):
            TOOLS[node.tool].validate(node.params)
        elif node.tool == "strict":  # a placeholder's value is checked once filled; no extra field beside it
            assert set(node.params) <= {"n"}
    for node_id, reason in out.dropped.items():
        assert reason and any(w.startswith(f"{node_id} dropped: {reason}") for w in out.warnings)
    assert len(kept) + len(out.dropped) <= len(raw)


@given(st.integers(1, 10**6))
def test_numbers_and_decorated_ids_name_the_same_node(number: int) -> None:
    assert norm_id(number) == norm_id(str(number)) == norm_id(float(number)) == norm_id(f"${number}") == f"n{number}"
    assert norm_id(f" {{n{number}}} ") == f"n{number}"


def test_what_is_no_id_is_none() -> None:
    assert norm_id(None) is None and norm_id(True) is None and norm_id(" $ ") is None and norm_id("{}") is None
    assert norm_id(2.5) == "2.5" and norm_id("step") == "step"


def test_an_unknown_tool_or_agent_is_dropped_naming_what_is_known() -> None:
    nodes, warnings, dropped = check([{"id": "n1", "tool": "fly"}, {"id": "n2", "agent": "ghost", "goal": "g"},
                                      {"id": "n3"}])
    assert nodes == {}
    assert dropped["n1"] == "unknown tool 'fly' (known: get_weather, search_web, strict)"
    assert dropped["n2"] == "unknown agent 'ghost' (known: research_agent)"
    assert dropped["n3"] == "names no tool or agent"
    assert "n1 dropped: unknown tool 'fly'" in warnings[0]
    assert validate_nodes([{"id": "n1", "agent": "a", "goal": "g"}], TOOLS).dropped["n1"].endswith("(known: none)")
    assert validate_nodes([{"id": "n1", "tool": "a"}], {}).dropped["n1"] == "unknown tool 'a' (known: none)"


def test_a_tool_named_as_an_agent_and_an_agent_named_as_a_tool_are_run_as_what_they_are() -> None:
    nodes, _, _ = check([{"id": "n1", "type": "sub_agent", "agent": "search_web", "params": {"query": "q"}},
                         {"id": "n2", "tool": "research_agent", "params": {"goal": "find x"}}])
    assert nodes["n1"].type == "tool" and nodes["n1"].tool == "search_web" and nodes["n1"].agent is None
    assert nodes["n2"].type == "sub_agent" and nodes["n2"].agent == "research_agent" and nodes["n2"].goal == "find x"
    assert nodes["n2"].tool is None and "goal" not in nodes["n2"].params


def test_a_sub_agent_s_goal_comes_from_its_params_when_not_given() -> None:
    nodes, _, _ = check([{"id": "n1", "agent": "research_agent", "params": {"task": " t ", "x": 1}},
                         {"id": "n2", "agent": "research_agent", "params": {"query": "q"}},
                         {"id": "n3", "agent": "research_agent", "goal": " own ", "params": {"goal": "other"}},
                         {"id": "n4", "agent": "research_agent", "goal": 5, "params": {"goal": " ", "task": "t4"}}])
    assert nodes["n1"].goal == "t" and nodes["n1"].params == {"x": 1}
    assert nodes["n2"].goal == "q" and nodes["n2"].params == {"query": "q"}
    assert nodes["n3"].goal == "own" and nodes["n3"].params == {"goal": "other"}
    assert nodes["n4"].goal == "t4"


def test_bad_arguments_drop_the_node_with_the_tool_s_reason_and_good_ones_are_coerced() -> None:
    nodes, warnings, dropped = check([{"id": "n1", "tool": "get_weather", "params": {"city": "Oslo", "days": "2"}},
                                      {"id": "n2", "tool": "get_weather", "params": {"days": 2}},
                                      {"id": "n3", "tool": "strict", "params": {"n": 1, "m": 2}}])
    assert nodes["n1"].params == {"city": "Oslo", "days": 2}
    assert dropped["n2"] == "get_weather: city: field required"
    assert dropped["n3"].startswith("strict: m: unknown field")
    assert "n3: 'm' is not a parameter of strict" not in warnings  # dropped nodes are not reported twice


def test_an_unknown_argument_of_a_lenient_tool_is_reported_for_the_repair_step() -> None:
    nodes, warnings, _ = check([{"id": "n1", "tool": "search_web", "params": {"query": "q", "lang": "fr"}}])
    assert "n1" in nodes and "n1: 'lang' is not a parameter of search_web" in warnings


def test_a_placeholder_field_is_checked_at_run_time_and_its_siblings_now() -> None:
    nodes, _, dropped = check([
        {"id": "n1", "tool": "search_web", "params": {"query": "capital"}},
        {"id": "n2", "tool": "get_weather", "params": {"city": "$n1", "days": "3"}},
        {"id": "n3", "tool": "get_weather", "params": {"city": "Oslo", "days": "{{n1}}"}},
        {"id": "n4", "tool": "get_weather", "params": {"city": "$n1", "unit": "${n1}"}},
        {"id": "n5", "tool": "strict", "params": {"n": "${n1}"}},
    ])
    assert nodes["n2"].params == {"city": "${n1}", "days": 3} and nodes["n2"].depends_on == ["n1"]
    assert nodes["n3"].params == {"city": "Oslo", "days": "${n1}"}
    assert nodes["n4"].params == {"city": "${n1}", "unit": "${n1}"} and nodes["n5"].params == {"n": "${n1}"}
    assert not dropped


def test_a_placeholder_naming_no_node_drops_its_node_and_those_that_need_it() -> None:
    nodes, warnings, dropped = check([
        {"id": "n1", "tool": "search_web", "params": {"query": "${n7}"}},
        {"id": "n2", "tool": "search_web", "params": {"query": "more on $n1"}},
        {"id": "n3", "tool": "search_web", "params": {"query": "${HOME} and under $500"}},
    ])
    assert dropped["n1"] == "its params use ${n7}, which names no node of the plan"
    assert dropped["n2"] == "its params use the result of n1, which was dropped"
    assert "n2 dropped: its params use the result of n1, which was dropped" in warnings
    assert nodes["n3"].params == {"query": "${HOME} and under $500"} and nodes["n3"].depends_on == []


def test_dependencies_that_point_nowhere_at_the_node_itself_or_at_a_dropped_node_are_removed() -> None:
    nodes, warnings, _ = check([
        {"id": "n1", "tool": "fly"},
        {"id": "n2", "tool": "search_web", "params": {"query": "a"}},
        {"id": "n3", "tool": "search_web", "params": {"query": "b"}, "depends_on": ["n9", "n3", "n1", 2, "n2"]},
        {"id": "n4", "tool": "search_web", "params": {"query": "c"}, "depends_on": "n2，n3, "},
        {"id": "n5", "tool": "search_web", "params": {"query": "d"}, "depends_on": ""},
    ])
    assert nodes["n3"].depends_on == ["n2"] and nodes["n4"].depends_on == ["n2", "n3"] and nodes["n5"].depends_on == []
    assert "n3: removed dependency on 'n9', which names no node" in warnings
    assert "n3: removed its dependency on itself" in warnings
    assert "n3: removed dependency on n1, which was dropped" in warnings


def test_ids_are_filled_renamed_on_a_clash_and_a_repeated_node_is_dropped() -> None:
    raw = [{"tool": "search_web", "params": {"query": "a"}}, {"id": "n1", "tool": "search_web", "params": {"query": "b"}},
           {"id": "n1", "tool": "search_web", "params": {"query": "c"}},
           {"id": "n1", "tool": "search_web", "params": {"query": "b"}}]
    out = validate_nodes(raw, TOOLS)
    assert [n.id for n in out.nodes] == ["n2", "n1", "n3"]
    assert [n.params["query"] for n in out.nodes] == ["a", "b", "c"]
    assert "id n1 clashes with an earlier node; renamed n3" in out.warnings
    assert out.dropped["n1#4"] == "it repeats n1 word for word (same id, same call)"
    partial = validate_nodes(raw[:1], TOOLS, partial=True)
    assert partial.warnings == ["n1: the node has no id; named n1 for now"]


def test_a_replan_never_reuses_an_existing_id_and_may_depend_on_existing_nodes() -> None:
    existing = {"n1": Node(id="n1", tool="search_web", params={"query": "a"})}
    out = validate_nodes([{"id": "n1", "tool": "get_weather", "params": {"city": "$n1"}},
                          {"id": "n2", "tool": "search_web", "params": {"query": "x"}, "depends_on": ["n1"]}],
                         TOOLS, existing=existing)
    nodes = {n.id: n for n in out.nodes}
    assert set(nodes) == {"n2", "n3"} and "id n1 clashes with an existing node; renamed n3" in out.warnings
    assert nodes["n3"].params["city"] == "${n1}" and nodes["n3"].depends_on == ["n1"]
    assert nodes["n2"].depends_on == ["n3"]


def test_the_limit_on_new_nodes_drops_the_rest_with_the_reason() -> None:
    raw = [{"id": f"n{i}", "tool": "search_web", "params": {"query": str(i)}} for i in (1, 2, 3)]
    out = validate_nodes(raw, TOOLS, limit=2)
    assert [n.id for n in out.nodes] == ["n1", "n2"] and out.dropped["n3"] == "more than the 2 new node(s) allowed"


def test_a_cycle_is_broken_at_the_edge_that_closes_it_and_a_placeholder_edge_is_kept() -> None:
    nodes, warnings, _ = check([
        {"id": "n1", "tool": "search_web", "params": {"query": "a"}, "depends_on": ["n2"]},
        {"id": "n2", "tool": "search_web", "params": {"query": "about $n1"}, "depends_on": ["n1"]},
    ])
    assert nodes["n1"].depends_on == [] and nodes["n2"].depends_on == ["n1"]
    assert any(w.startswith("cycle ") and "removed the dependency of n1 on n2" in w for w in warnings)


def test_nodes_that_need_each_other_s_results_cannot_run_and_are_dropped() -> None:
    nodes, _, dropped = check([
        {"id": "n1", "tool": "search_web", "params": {"query": "$n2"}},
        {"id": "n2", "tool": "search_web", "params": {"query": "$n1"}},
        {"id": "n3", "tool": "search_web", "params": {"query": "after ${n2}"}},
        {"id": "n4", "tool": "search_web", "params": {"query": "free"}, "depends_on": ["n1"]},
    ])
    assert set(nodes) == {"n4"} and nodes["n4"].depends_on == []
    assert "which depends on it (a cycle)" in dropped["n1"] + dropped["n2"]
    assert dropped["n3"] == "its params use the result of n2, which was dropped"


def test_literal_params_take_no_placeholders_and_race_groups_are_cleaned() -> None:
    nodes, _, _ = check([{"id": "n1", "tool": "search_web", "params": {"query": "$n2 costs ${n9}"}, "race_group": " "},
                         {"id": "n2", "tool": "search_web", "params": {"query": "x"}, "race_group": True}],
                        placeholders=False)
    assert nodes["n1"].params == {"query": "$n2 costs ${n9}"} and nodes["n1"].depends_on == []
    assert nodes["n1"].race_group is None and nodes["n2"].race_group is None


def test_a_sub_agent_goal_naming_a_node_waits_for_it_and_keeps_its_words() -> None:
    nodes, _, _ = check([{"id": "n1", "tool": "search_web", "params": {"query": "x"}},
                         {"id": "n2", "agent": "research_agent", "goal": "根据 $n1 写报告"}])
    assert nodes["n2"].goal == "根据 $n1 写报告" and nodes["n2"].depends_on == ["n1"]


def test_race_groups_written_by_the_model_reach_the_graph() -> None:
    nodes, _, _ = check([{"id": "n1", "tool": "search_web", "params": {"query": "a"}, "race_group": " fast "},
                         {"id": "n2", "tool": "search_web", "params": {"query": "b"}, "race_group": "fast"}])
    assert nodes["n1"].race_group == "fast" and nodes["n2"].race_group == "fast"


def test_type_decides_between_a_tool_and_an_agent_named_in_one_node() -> None:
    both = {"tool": "search_web", "agent": "research_agent", "params": {"query": "q"}, "goal": "g"}
    nodes, _, _ = check([{"id": "n1", "type": "sub_agent", **both}, {"id": "n2", **both}])
    assert nodes["n1"].type == "sub_agent" and nodes["n1"].agent == "research_agent"
    assert nodes["n2"].type == "tool" and nodes["n2"].tool == "search_web"
    out = validate_nodes([{"id": "n1", "agent": "ghost", "goal": "g"}], TOOLS, agents={"a1": "x", "a2": "y"})
    assert out.dropped["n1"] == "unknown agent 'ghost' (known: a1, a2)"


def test_a_tool_node_has_no_goal_unless_written() -> None:
    nodes, _, _ = check([{"id": "n1", "tool": "search_web", "params": {"query": "q"}}])
    assert nodes["n1"].goal == ""


def test_a_required_placeholder_field_does_not_stop_its_siblings_being_coerced() -> None:
    tools = {"src": TOOLS["search_web"],
             "calc": Tool.from_json_schema("calc", "C", {"properties": {"n": {"type": "integer"}, "m": {"type": "integer"},
                                                                         "unit": {"enum": ["c"]}},
                                                          "required": ["n", "unit"], "additionalProperties": False}, _noop)}
    out = validate_nodes([{"id": "n1", "tool": "src", "params": {"query": "q"}},
                          {"id": "n2", "tool": "calc", "params": {"n": "$n1", "unit": "{{n1}}", "m": "2"}}], tools)
    assert {n.id: n.params for n in out.nodes}["n2"] == {"n": "${n1}", "unit": "${n1}", "m": 2}


def test_drops_cascade_whatever_the_order_the_nodes_were_written_in() -> None:
    nodes, _, dropped = check([{"id": "n1", "tool": "fly"},
                               {"id": "n3", "tool": "search_web", "params": {"query": "more on $n2"}},
                               {"id": "n2", "tool": "search_web", "params": {"query": "$n1"}},
                               {"id": "n4", "tool": "search_web", "params": {"query": "free"}}])
    assert set(nodes) == {"n4"}
    assert dropped["n2"] == "its params use the result of n1, which was dropped"
    assert dropped["n3"] == "its params use the result of n2, which was dropped"
    _, _, two = check([{"id": "n1", "tool": "fly"}, {"id": "n4", "tool": "nope"},
                       {"id": "n3", "tool": "search_web", "params": {"query": "$n1 and $n4"}}])
    assert two["n3"] == "its params use the result of n1, n4, which was dropped"


def test_a_cycle_closed_by_a_plain_dependency_keeps_the_placeholder_edge() -> None:
    nodes, warnings, dropped = check([
        {"id": "n1", "tool": "search_web", "params": {"query": "about $n2"}},
        {"id": "n2", "tool": "search_web", "params": {"query": "b"}, "depends_on": ["n1"]},
    ])
    assert not dropped and nodes["n1"].depends_on == ["n2"] and nodes["n2"].depends_on == []
    assert "cycle n2 -> n1 -> n2: removed the dependency of n2 on n1" in warnings or any(
        "removed the dependency of n2 on n1" in w for w in warnings)


def test_a_cycle_of_plain_dependencies_is_broken_at_the_edge_pointing_forward() -> None:
    nodes, warnings, _ = check([
        {"id": "n1", "tool": "search_web", "params": {"query": "a"}, "depends_on": ["n3"]},
        {"id": "n2", "tool": "search_web", "params": {"query": "b"}, "depends_on": ["n1"]},
        {"id": "n3", "tool": "search_web", "params": {"query": "c"}, "depends_on": ["n2"]},
    ])
    assert nodes["n1"].depends_on == [] and nodes["n2"].depends_on == ["n1"] and nodes["n3"].depends_on == ["n2"]
    assert sum("removed the dependency of n1 on n3" in w for w in warnings) == 1


def test_new_nodes_may_use_and_wait_for_an_existing_node_and_never_for_themselves() -> None:
    existing = {"n1": Node(id="n1", tool="search_web", params={"query": "a"})}
    out = validate_nodes([{"id": "n2", "tool": "search_web", "params": {"query": "${n1} then $n2"}},
                          {"id": "n3", "tool": "search_web", "params": {"query": "x"}, "depends_on": ["n1", 1]}],
                         TOOLS, existing=existing)
    nodes = {n.id: n for n in out.nodes}
    assert nodes["n2"].depends_on == ["n1"] and nodes["n2"].params == {"query": "${n1} then $n2"}
    assert nodes["n3"].depends_on == ["n1"]


def test_nodes_after_a_repeated_one_are_kept_and_a_whole_plan_warns_of_no_missing_ids() -> None:
    again = {"id": "n1", "tool": "search_web", "params": {"query": "a"}}
    out = validate_nodes([again, dict(again), {"tool": "search_web", "params": {"query": "b"}}], TOOLS)
    assert [n.id for n in out.nodes] == ["n1", "n2"] and not any("for now" in w for w in out.warnings)


def test_every_bad_argument_is_in_the_reason() -> None:
    _, _, dropped = check([{"id": "n1", "tool": "get_weather", "params": {"city": "x", "days": "many", "unit": "k"}}])
    assert dropped["n1"] == ('get_weather: days: expected integer, got "many"; '
                             'unit: must be one of "c", "f"; got "k"')


def test_ids_are_kept_as_written_apart_from_their_decoration() -> None:
    assert norm_id("X2") == "X2" and norm_id("{X}") == "X" and norm_id("$Xn") == "Xn"


def test_the_two_nodes_of_a_placeholder_cycle_are_dropped_each_with_its_reason() -> None:
    _, _, dropped = check([{"id": "n1", "tool": "search_web", "params": {"query": "$n2"}},
                           {"id": "n2", "tool": "search_web", "params": {"query": "$n1"}}])
    assert dropped == {"n1": "its params need the result of n2, which depends on it (a cycle)",
                       "n2": "its params use the result of n1, which was dropped"}
