"""The oracle of bench/against_react.py answers what a competent (or once-mistaken) model would,
and the bench's exact-call check accepts what it should: the bench is only as true as these."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).parents[3] / "bench"


def _load(name: str) -> Any:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


oracle = _load("react_oracle")
_load("react_tools")
bench = _load("against_react")

TASKS, MISTAKES = oracle.load(str(BENCH / "data" / "react_tasks.json"))
BY_ID = {t.id: t for t in TASKS}


def react_body(task: Any, *turns: tuple[list[dict[str, Any]], list[str]]) -> dict[str, Any]:
    """A ReAct request: the query, then each round's calls (as the oracle sent them) and their results."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": oracle.REACT_SYSTEM},
                                      {"role": "user", "content": task.query}]
    for calls, results in turns:
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls]})
        messages += [{"role": "tool", "tool_call_id": c["id"], "content": r} for c, r in zip(calls, results, strict=True)]
    return {"model": "oracle", "messages": messages, "tools": [{"type": "function", "function": {"name": "x"}}]}


def step(task: Any, run: Any, *turns: tuple[list[dict[str, Any]], list[str]]) -> tuple[str, list[dict[str, Any]], Any]:
    return oracle.react_step(react_body(task, *turns), run)


def test_a_chain_is_called_one_level_at_a_time_with_the_results_filled_in() -> None:
    task = BY_ID["chain-03"]
    run = oracle.Run(task=task, results={})
    _, first, _ = step(task, run)
    assert [(c["name"], json.loads(c["arguments"])) for c in first] == [("lookup_capital", {"country": "Japan"})]
    _, second, _ = step(task, run, (first, ["Tokyo"]))
    assert [(c["name"], json.loads(c["arguments"])) for c in second] == [("get_timezone", {"city": "Tokyo"})]
    _, third, _ = step(task, run, (first, ["Tokyo"]), (second, ["Asia/Tokyo"]))
    assert [(c["name"], json.loads(c["arguments"])) for c in third] == [("get_time", {"timezone": "Asia/Tokyo"})]
    text, last, _ = step(task, run, (first, ["Tokyo"]), (second, ["Asia/Tokyo"]), (third, ["12:00"]))
    assert last == [] and text == task.answer


def test_independent_calls_and_race_members_go_out_together() -> None:
    task = BY_ID["race-06"]
    run = oracle.Run(task=task, results={})
    _, calls, _ = step(task, run)
    assert sorted(c["name"] for c in calls) == ["get_weather", "rate_ecb", "rate_fed"]
    text, after, _ = step(task, run, (calls, ["9.09", "9.09", "伦敦: rain"]))
    assert after == [] and text == task.answer


def test_a_wrong_argument_is_made_once_and_corrected_after_the_error() -> None:
    task = BY_ID["fanout-01"]
    run = oracle.Run(task=task, results={}, mistake=oracle.Mistake(kind="wrong_argument", node="n2", params={"city": "Pari"}))
    _, calls, _ = step(task, run)
    assert [json.loads(c["arguments"])["city"] for c in calls] == ["London", "Pari", "Berlin"]
    _, retry, _ = step(task, run, (calls, ["London: rain", "Error: city: unknown value 'Pari'", "Berlin: sunny"]))
    assert [(c["name"], json.loads(c["arguments"])) for c in retry] == [("get_weather", {"city": "Paris"})]
    assert len({c["id"] for c in calls + retry}) == 4


def test_a_missing_dependency_sends_the_dependent_call_early_with_a_guess() -> None:
    task = BY_ID["chain-01"]
    run = oracle.Run(task=task, results={}, mistake=oracle.Mistake(kind="missing_dependency", node="n2",
                                                                    params={"city": "capital of Australia"}))
    _, calls, _ = step(task, run)
    assert [(c["name"], json.loads(c["arguments"])) for c in calls] == [
        ("lookup_capital", {"country": "Australia"}), ("get_weather", {"city": "capital of Australia"})]
    _, retry, _ = step(task, run, (calls, ["Canberra", "Error: city: unknown value"]))
    assert [json.loads(c["arguments"]) for c in retry] == [{"city": "Canberra"}]


def test_a_truncated_reply_stops_mid_arguments_with_finish_reason_length() -> None:
    task = BY_ID["chain-06"]
    run = oracle.Run(task=task, results={}, mistake=oracle.Mistake(kind="truncated", keep=0.5))
    _, calls, finish = step(task, run)
    assert finish == "length"
    try:
        json.loads(calls[-1]["arguments"])
        raise AssertionError("the arguments should be cut")
    except ValueError:
        pass
    plan_run = oracle.Run(task=task, results={}, mistake=oracle.Mistake(kind="truncated", keep=0.5))
    text, _, finish = oracle.plan_text(plan_run)
    assert finish == "length" and oracle.plan_json(task.plan).startswith(text) and len(text) < len(oracle.plan_json(task.plan))


def test_the_plan_carries_each_mistake_where_the_task_set_puts_it() -> None:
    task = BY_ID["chain-01"]
    run = oracle.Run(task=task, results={}, mistake=oracle.Mistake(kind="missing_dependency", node="n2",
                                                                  params={"city": "capital of Australia"}))
    nodes = json.loads(oracle.plan_text(run)[0])
    assert nodes[1] == {"id": "n2", "tool": "get_weather", "params": {"city": "capital of Australia"}}  # guessed
    run = oracle.Run(task=BY_ID["fanout-02"], results={}, mistake=oracle.Mistake(kind="unknown_tool", node="n1", tool="weather"))
    assert [n["tool"] for n in json.loads(oracle.plan_text(run)[0])] == ["weather", "get_weather", "get_weather"]
    assert json.loads(oracle.plan_text(run)[0])[0]["tool"] == "get_weather"  # the mistake is made once


def test_a_replan_gets_the_nodes_that_did_not_run_renumbered() -> None:
    task = BY_ID["chain-01"]
    state = ('- n1 tool:lookup_capital params={"country": "Australia"} status=done → Canberra\n'
             '- n2 tool:get_weather params={"city": "Pari"} depends_on=[\'n1\'] status=failed → city: unknown value')
    body = {"messages": [{"role": "system", "content": "plan ... depends_on ..."},
                         {"role": "user", "content": f"Request: {task.query}\n\nState of the task graph:\n{state}"}]}
    assert oracle.classify(body) == "replan"
    added = json.loads(oracle.replan_text(body, oracle.Run(task=task, results={})))
    assert added == [{"id": "n3", "tool": "get_weather", "params": {"city": "$n1"}}]  # the placeholder is the dependency


def test_a_replan_while_nodes_still_run_adds_only_what_failed() -> None:
    task = BY_ID["fanin-06"]
    state = ('- n1 tool:get_stock_price params={"symbol": "TSLA"} status=running\n'
             '- n2 tool:get_stock_price params={"symbol": "NVDA"} status=done → 128.60\n'
             '- n3 tool:calculator params={"expression": "TSLA+NVDA"} status=failed → expression: not arithmetic')
    body = {"messages": [{"role": "system", "content": "plan ... depends_on ..."},
                         {"role": "user", "content": f"Request: {task.query}\n\nState of the task graph:\n{state}"}]}
    added = json.loads(oracle.replan_text(body, oracle.Run(task=task, results={})))
    assert added == [{"id": "n4", "tool": "calculator", "params": {"expression": "$n1+$n2"}}]


def test_requests_are_told_apart() -> None:
    assert oracle.classify({"messages": [{"role": "system", "content": oracle.REACT_SYSTEM}]}) == "react"
    assert oracle.classify({"messages": [{"role": "system", "content": 'nodes with "depends_on"'}]}) == "plan"
    assert oracle.classify({"messages": [{"role": "system", "content": "You decide what an assistant should remember"}]}) == "extraction"
    assert oracle.classify({"messages": [{"role": "system", "content": "Call the tool"}], "tools": [{}]}) == "tool_args"
    assert oracle.classify({"messages": [{"role": "system", "content": "Write the answer"}]}) == "answer"


def test_tokens_count_tool_definitions_and_calls_the_same_way_for_both_systems() -> None:
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
    body = {"messages": [{"role": "user", "content": "x" * 40},
                         {"role": "assistant", "content": None,
                          "tool_calls": [{"id": "c", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]}],
            "tools": tools}
    assert oracle.prompt_tokens(body) == (40 + len("get_weather") + len('{"city": "Paris"}') + len(json.dumps(tools))) // 4
    assert oracle.completion_tokens("abcd" * 5, [{"name": "f", "arguments": "{}" * 2}]) == (20 + 1 + 4) // 4


def test_exact_calls_need_one_member_of_each_race_and_nothing_else() -> None:
    race = {("rate_ecb", "a"), ("rate_fed", "a")}
    exp = bench.Expected(required=bench.Counter({("get_weather", "b"): 1}), races=[race], results={})
    assert exp.exact([("get_weather", "b"), ("rate_ecb", "a")])
    assert exp.exact([("get_weather", "b"), ("rate_ecb", "a"), ("rate_fed", "a")])
    assert not exp.exact([("get_weather", "b")])
    assert not exp.exact([("get_weather", "b"), ("rate_ecb", "a"), ("get_weather", "b")])
    assert not exp.exact([("rate_fed", "a")])


def test_the_task_set_holds_what_the_issue_asks_for() -> None:
    kinds = {t.kind for t in TASKS}
    assert len(TASKS) >= 40 and {"fanout", "chain", "fanin", "race", "single", "none"} <= kinds
    assert {t.lang for t in TASKS} == {"en", "zh"}
    assert {m.kind for _, m in MISTAKES} == {"wrong_argument", "missing_dependency", "unknown_tool", "truncated"}
    assert any("${n" in json.dumps(t.plan) for t in TASKS)


TEMPLATED, _ = oracle.load(str(BENCH / "data" / "react_tasks.json"), str(BENCH / "data" / "react_answer_templates.json"))
READ_OR_JUDGED = {"search_web", "search_news", "fetch_page", "summarize", "compare"}


def test_plans_are_written_in_the_compact_form_the_planner_prompt_shows() -> None:
    chain = json.loads(oracle.plan_text(oracle.Run(task=BY_ID["chain-03"], results={}))[0])
    assert chain == [{"id": "n1", "tool": "lookup_capital", "params": {"country": "Japan"}},
                     {"id": "n2", "tool": "get_timezone", "params": {"city": "$n1"}},
                     {"id": "n3", "tool": "get_time", "params": {"timezone": "$n2"}}]
    race = json.loads(oracle.plan_text(oracle.Run(task=BY_ID["race-02"], results={}))[0])
    assert race == [{"id": "n1", "tool": "rate_ecb", "params": {"base": "CNY", "quote": "USD"}, "race_group": "rate"},
                    {"id": "n2", "tool": "rate_fed", "params": {"base": "CNY", "quote": "USD"}, "race_group": "rate"}]


def test_answer_templates_follow_the_stated_rule_and_saber_keeps_every_one() -> None:
    from saber.planner import parse_plan

    tools = {t.name: t for t in sys.modules["react_tools"].TOOLS}
    with_template = [t for t in TEMPLATED if t.template]
    assert with_template and {t.id for t in with_template} <= {t.id for t in TASKS}
    for task in TEMPLATED:
        names = {n["tool"] for n in task.plan}
        racing = any(n["race_group"] for n in task.plan)
        if task.template:  # a pure lookup: no race, nothing to read or judge
            assert task.plan and not racing and not names & READ_OR_JUDGED, task.id
            text = oracle.plan_text(oracle.Run(task=task, results={}))[0]
            assert json.loads(text)[-1] == {"answer": task.template}
            plan = parse_plan(text, tools)
            assert plan.answer is not None and [n.id for n in plan.nodes] == [n["id"] for n in task.plan], task.id
        else:
            assert not task.plan or racing or names & READ_OR_JUDGED, task.id  # the rule leaves none out
