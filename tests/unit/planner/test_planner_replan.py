from __future__ import annotations

from typing import Any

from saber.graph import Node, NodeStatus
from saber.llm import ModelError
from saber.planner import ReplanBudget, replan
from saber.testing import ScriptedModel
from saber.tools import Tool


def _noop(args: dict[str, Any]) -> Any:
    raise AssertionError


SEARCH = Tool.from_json_schema("search_web", "Search", {"properties": {"query": {"type": "string"}}, "required": ["query"]}, _noop)
RAG = Tool.from_json_schema("rag_search", "KB", {"properties": {"query": {"type": "string"}}, "required": ["query"]}, _noop)
TOOLS = {"search_web": SEARCH, "rag_search": RAG}


def _state() -> list[Node]:
    return [
        Node(id="n1", tool="rag_search", params={"query": "x"}, status=NodeStatus.FAILED, error="知识库为空"),
        Node(id="n2", tool="search_web", params={"query": "x"}, status=NodeStatus.DONE, result="found: Lyon"),
    ]


async def test_replanning_is_off_by_default_and_calls_no_model() -> None:
    model = ScriptedModel([])
    result = await replan("q", _state(), TOOLS, model, budget=ReplanBudget(), reason="n1 failed")
    assert result.nodes == [] and not result.attempted
    assert result.warnings == ["replanning is off"]
    assert model.calls == []


async def test_new_nodes_are_validated_renamed_and_capped() -> None:
    reply = ('[{"id":"n2","tool":"search_web","params":{"query":"more about $n2"}},'
             '{"id":"n4","tool":"search_web","params":{"query":"b"},"depends_on":["n1"]},'
             '{"id":"n5","tool":"no_such_tool","params":{}},'
             '{"id":"n6","tool":"search_web","params":{"query":"c"}}]')
    model = ScriptedModel([reply])
    budget = ReplanBudget(max_replans=1, max_new_nodes=2)
    result = await replan("法国城市", _state(), TOOLS, model, budget=budget, reason="n1 failed: 知识库为空")
    model.assert_complete()
    prompt = model.calls[0].prompt
    assert "知识库为空" in prompt and "found: Lyon" in prompt and "n3" in prompt
    # the clashing "n2" is renamed; its placeholder still means the existing n2 (it names itself otherwise)
    assert [(n.id, n.params, n.depends_on) for n in result.nodes] == [
        ("n3", {"query": "more about ${n2}"}, ["n2"]),
        ("n4", {"query": "b"}, ["n1"]),
    ]
    assert any("clashes with an existing node" in w for w in result.warnings)
    assert any("unknown tool 'no_such_tool'" in w for w in result.warnings)
    assert any("n6 dropped: more than the 2 new node(s) allowed" in w for w in result.warnings)
    assert budget.used == 1


async def test_budget_is_spent_per_task() -> None:
    model = ScriptedModel(["[]"])
    budget = ReplanBudget(max_replans=1)
    first = await replan("q", _state(), TOOLS, model, budget=budget, reason="r")
    second = await replan("q", _state(), TOOLS, model, budget=budget, reason="r")
    assert first.attempted and first.nodes == []
    assert not second.attempted and "spent" in second.warnings[0]
    assert len(model.calls) == 1


async def test_unusable_reply_and_model_errors_become_warnings() -> None:
    model = ScriptedModel(["I cannot help with that.", ModelError("rate limited", retryable=True)])
    budget = ReplanBudget(max_replans=2)
    bad = await replan("q", _state(), TOOLS, model, budget=budget, reason="r")
    err = await replan("q", _state(), TOOLS, model, budget=budget, reason="r")
    assert bad.nodes == [] and "unusable" in bad.warnings[-1]
    assert err.nodes == [] and "rate limited" in err.warnings[0]


async def test_a_replan_that_repeats_calls_already_made_adds_only_the_new_ones() -> None:
    reply = ('[{"id":"n3","tool":"rag_search","params":{"query":"x"}},'
             '{"id":"n4","tool":"search_web","params":{"query":"x"}},'
             '{"id":"n5","tool":"search_web","params":{"query":"French cities"}}]')
    result = await replan("q", _state(), TOOLS, ScriptedModel([reply]), budget=ReplanBudget(max_replans=1),
                          reason="n1 failed")
    assert [n.id for n in result.nodes] == ["n5"]
    assert "replan repeated calls already made: n3, n4; left out" in result.warnings


async def test_a_repeat_a_new_node_depends_on_is_kept() -> None:
    reply = ('[{"id":"n3","tool":"search_web","params":{"query":"x"}},'
             '{"id":"n4","tool":"rag_search","params":{"query":"$n3"},"depends_on":["n3"]}]')
    result = await replan("q", _state(), TOOLS, ScriptedModel([reply]), budget=ReplanBudget(max_replans=1),
                          reason="n1 failed")
    assert [n.id for n in result.nodes] == ["n3", "n4"]
