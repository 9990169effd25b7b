"""End to end, one test per mode, with ScriptedModel: the exact event sequence of each."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from saber.agent import Agent
from saber.config import Settings
from saber.events import Done, NodeDone, NodeStart, Plan, RagResult, Route, Token, ToolCallEvent
from saber.llm.types import Completion, ToolCall, Usage
from saber.rag import HashingEmbedder, RagEngine, SQLiteStore
from saber.testing import ScriptedModel
from saber.testing import event_kinds as kinds
from saber.tools import tool


@tool(name="get_weather")
async def city_weather(city: str) -> str:
    """Weather of a city (a test tool with a fixed report)."""
    await asyncio.sleep(0)
    return f"{city}: sunny, 21°C"


@tool(name="get_time")
def zone_time(timezone: str = "UTC") -> str:
    """Time in a zone (a test tool with a fixed time)."""
    return f"12:00 in {timezone}"


@tool
def read_record(record_id: str) -> str:
    """Read a record.

    Args:
        record_id: The record's id.
    """
    return f"record {record_id}"


@pytest.mark.parametrize(("query", "said"), [
    ("read the record for me", "read_record could not be called: its arguments can only be made from your request "
                               "by a language model, and none is configured."),
    ("帮我读一下那条记录", "无法调用 read_record：它需要的参数只能由语言模型从你的请求中得出，而当前没有配置语言模型。"),
])
async def test_a_chosen_tool_that_cannot_be_called_without_a_model_is_named_in_the_answer(
        make_agent: Callable[..., Agent], query: str, said: str) -> None:
    agent = make_agent(None, builtin=False, tools=[read_record])
    answer = await agent.ask(query, user_id="u1", mode="tool", selected_tools=["read_record"])
    route = next(e for e in answer.events if isinstance(e, Route))
    assert route.mode == "chat" and "no arguments for read_record" in route.rule
    assert answer.answer == said and not [e for e in answer.events if isinstance(e, ToolCallEvent)]


async def test_chat_mode(make_agent: Callable[..., Agent]) -> None:
    model = ScriptedModel(["你好！我是 Saber。"])
    agent = make_agent(model)
    answer = await agent.ask("你好", user_id="u1")
    assert kinds(answer.events) == ["start", "route", "token", "done"]
    route = answer.events[1]
    assert isinstance(route, Route) and (route.mode, route.rule) == ("chat", "keywords:chat(small talk)")
    assert answer.answer == "你好！我是 Saber。"
    assert "".join(e.content for e in answer.events if isinstance(e, Token)) == answer.answer
    assert answer.model == "scripted" and answer.usage["total_tokens"] > 0
    model.assert_complete()


async def test_chat_uses_history_of_that_user_only(make_agent: Callable[..., Agent]) -> None:
    model = ScriptedModel(["first answer", "second answer", "other user's answer"])
    agent = make_agent(model)
    await agent.ask("hello there", user_id="alice")
    await agent.ask("and again", user_id="alice")
    await agent.ask("hi", user_id="bob")
    alice_second, bob_first = model.calls[1].messages, model.calls[2].messages
    assert [m.content for m in alice_second if m.role != "system"] == ["hello there", "first answer", "and again"]
    assert [m.content for m in bob_first if m.role != "system"] == ["hi"]


async def test_tool_mode_asks_the_model_for_the_arguments_then_for_the_answer(make_agent: Callable[..., Agent]) -> None:
    args = Completion(tool_calls=(ToolCall(id="c1", name="get_time", arguments={"timezone": "Asia/Tokyo"}),))
    model = ScriptedModel([args, "东京现在是中午十二点。"])
    agent = make_agent(model, builtin=False, tools=[zone_time])
    answer = await agent.ask("东京现在几点", user_id="u1")
    assert kinds(answer.events) == ["start", "route", "tool_call", "token", "done"]
    call = answer.events[2]
    assert isinstance(call, ToolCallEvent) and call.tool_name == "get_time"
    assert call.params == {"timezone": "Asia/Tokyo"} and call.tool_result == "12:00 in Asia/Tokyo"
    assert model.calls[0].tools == ["get_time"]  # native function calling
    assert len(model.calls) == 2 and "12:00" in model.calls[1].prompt
    assert answer.answer == "东京现在是中午十二点。" and answer.mode == "tool"


async def test_tool_mode_without_arguments_falls_back_not_to_the_first_tool(make_agent: Callable[..., Agent]) -> None:
    model = ScriptedModel(["I need a city.", "{}", "[]", "I need a city to check the weather."])  # args: none, twice
    agent = make_agent(model, builtin=False, tools=[city_weather])
    answer = await agent.ask("how is the weather", user_id="u1")
    route = next(e for e in answer.events if isinstance(e, Route))
    assert route.mode == "react" and "no arguments for get_weather" in route.rule
    assert not [e for e in answer.events if isinstance(e, ToolCallEvent)]
    assert answer.answer == "I need a city to check the weather."


async def test_rag_mode_grounds_and_cites(make_agent: Callable[..., Agent]) -> None:
    model = ScriptedModel(["ClusterIP 只在集群内部可达 [1]。"])
    agent = make_agent(model)
    engine = agent.services.knowledge
    assert engine is not None
    engine.ingest_text("K8s Service 类型", "# Service\n\nClusterIP 是默认类型，只在集群内部可达。NodePort 在每个节点上开放端口。", source="notes.md")
    engine.ingest_text("Tea", "Green tea is not fermented; black tea is fully oxidised.", source="tea.md")
    answer = await agent.ask("ClusterIP 可以从集群外访问吗", user_id="u1")
    assert kinds(answer.events) == ["start", "route", "rag_result", "token", "done"]
    hits = next(e for e in answer.events if isinstance(e, RagResult)).hits
    assert hits[0]["title"] == "K8s Service 类型" and hits[0]["score_kind"] == "rrf"
    assert "ClusterIP 是默认类型" in model.calls[0].prompt
    assert answer.mode == "rag"


async def test_rag_mode_without_a_model_quotes_passages(make_agent: Callable[..., Agent]) -> None:
    agent = make_agent(None)
    assert agent.services.knowledge is not None
    agent.services.knowledge.ingest_text("HTTP caching", "Cache-Control max-age tells a cache how long a response stays fresh.", source="http.md")
    answer = await agent.ask("how long does a response stay fresh", user_id="u1")
    assert answer.mode == "rag" and answer.model is None
    assert "Cache-Control max-age" in answer.answer and "[1] HTTP caching" in answer.answer
    assert "not written by a language model" in answer.answer



async def test_rag_mode_says_how_many_chunks_wait_for_vectors_only_while_they_do(make_agent: Callable[..., Agent],
                                                                                   tmp_path: Path) -> None:
    engine = RagEngine(SQLiteStore(tmp_path / "kb.db"), HashingEmbedder(), background_vectors=False)
    agent = make_agent(None, knowledge=engine)
    engine.ingest_text("HTTP caching", "Cache-Control max-age tells a cache how long a response stays fresh.", wait=False)
    engine.ingest_text("茶", "绿茶不发酵，红茶是全发酵茶。", wait=False)
    waiting = engine.pending_count()
    answer = await agent.ask("Cache-Control max-age", user_id="u1")
    assert answer.mode == "rag" and "Cache-Control max-age tells" in answer.answer
    assert f"{waiting} chunk(s) of the knowledge base are still waiting for their vectors" in answer.answer
    await asyncio.to_thread(engine.fill_vectors)
    answer = await agent.ask("Cache-Control max-age", user_id="u1")
    assert answer.mode == "rag" and "Cache-Control max-age tells" in answer.answer
    assert "waiting for their vectors" not in answer.answer and "may still be computed" not in answer.answer

async def test_react_mode_runs_the_plan_in_parallel_and_generates(make_agent: Callable[..., Agent], tmp_path: Path) -> None:
    plan = json.dumps([
        {"id": "n1", "type": "tool", "tool": "get_time", "params": {"timezone": "Asia/Shanghai"}, "depends_on": []},
        {"id": "n2", "type": "tool", "tool": "get_weather", "params": {"city": "北京"}, "depends_on": []},
    ])
    model = ScriptedModel([Completion(text=plan, usage=Usage(prompt_tokens=50, completion_tokens=20)), "北京现在 12 点，晴，21°C。"])
    tools = [zone_time,
             city_weather]
    agent = make_agent(model, builtin=False, tools=tools,  # the plan parsed whole (streamed: test_agent_streamed_plan)
                       settings=Settings(home=tmp_path, search={"backend": "none"}, planner={"stream": False}))
    answer = await agent.ask("现在几点，北京天气怎么样", user_id="u1")
    sequence = [e.type for e in answer.events if e.type not in ("step", "token")]
    assert sequence[:5] == ["start", "route", "plan", "graph_ready", "node_start"]
    assert sorted(sequence[4:8]) == ["node_done", "node_done", "node_start", "node_start"]
    assert sequence[8:] == ["done"]
    for node_id in ("n1", "n2"):
        started = next(i for i, e in enumerate(answer.events) if isinstance(e, NodeStart) and e.id == node_id)
        finished = next(i for i, e in enumerate(answer.events) if isinstance(e, NodeDone) and e.id == node_id)
        assert started < finished
    assert {e.id: e.status for e in answer.events if isinstance(e, NodeDone)} == {"n1": "done", "n2": "done"}
    plan_event = next(e for e in answer.events if isinstance(e, Plan))
    assert (plan_event.source, plan_event.format) == ("model", "ideal")
    assert "12:00 in Asia/Shanghai" in model.calls[1].prompt and "北京: sunny, 21°C" in model.calls[1].prompt
    assert answer.answer == "北京现在 12 点，晴，21°C。"
    assert answer.usage["prompt_tokens"] >= 50


async def test_react_empty_plan_becomes_chat(make_agent: Callable[..., Agent]) -> None:
    model = ScriptedModel(["```json\n[]\n```", "Nothing to look up; here is my answer."])
    agent = make_agent(model)
    answer = await agent.ask("summarize our discussion so far", user_id="u1", mode="react")
    assert kinds(answer.events) == ["start", "route", "plan", "token", "done"]
    assert answer.answer == "Nothing to look up; here is my answer."


async def test_react_unparseable_plan_uses_the_rule_planner(make_agent: Callable[..., Agent]) -> None:
    model = ScriptedModel(["I think you should check the time and the weather!", "done"])
    tools = [zone_time]
    agent = make_agent(model, builtin=False, tools=tools)
    answer = await agent.ask("what time is it and what's the weather", user_id="u1")
    plan = next(e for e in answer.events if isinstance(e, Plan))
    assert plan.source == "rules" and [n["tool"] for n in plan.nodes] == ["get_time"]
    assert any("rule planner" in w for w in plan.warnings)


async def test_answers_are_never_passed_off_as_a_models_without_one(make_agent: Callable[..., Agent]) -> None:
    agent = make_agent(None)
    answer = await agent.ask("你好", user_id="u1")
    assert answer.model is None
    assert "没有配置语言模型" in answer.answer


async def test_done_comes_last_and_once(make_agent: Callable[..., Agent]) -> None:
    agent = make_agent(ScriptedModel(["ok"]))
    events = [e async for e in agent.stream("hello", user_id="u1")]
    assert [isinstance(e, Done) for e in events].count(True) == 1 and isinstance(events[-1], Done)


async def test_react_replans_after_a_failure_when_enabled(make_agent: Callable[..., Agent], tmp_path: Path) -> None:
    from saber.events import Replan
    from saber.tools import ToolError

    @tool(name="search_web")
    def broken_search(query: str) -> str:
        """Web search that is down."""
        raise ToolError("search backend is down")

    plan = '[{"id": "n1", "tool": "search_web", "params": {"query": "time in Tokyo"}}]'
    replan = '[{"id": "n2", "tool": "get_time", "params": {"timezone": "Asia/Tokyo"}}]'
    model = ScriptedModel([plan, replan, "It is 12:00 in Tokyo."])
    agent = make_agent(model, builtin=False, tools=[broken_search, zone_time],
                       settings=Settings(home=tmp_path, search={"backend": "none"}, graph={"max_replan": 1, "retry_delay": 0}))
    answer = await agent.ask("search the time in Tokyo", user_id="u1", mode="react")
    replans = [e for e in answer.events if isinstance(e, Replan)]
    assert len(replans) == 1 and replans[0].added == ["n2"] and replans[0].max == 1
    done = {e.id: e.status for e in answer.events if isinstance(e, NodeDone)}
    assert done == {"n1": "failed", "n2": "done"}
    assert "12:00 in Asia/Tokyo" in model.calls[2].prompt
    model.assert_complete()


async def test_a_plan_the_runtime_rejects_falls_back_to_the_rule_plan(
    make_agent: Callable[..., Agent], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from saber.events import Error
    from saber.graph import Node
    from saber.planner import ParsedPlan

    def bad_plan(text: str, tools: object, **kwargs: object) -> ParsedPlan:
        nodes = [Node(id="n1", tool="get_time", params={}, race_group="g"),
                 Node(id="n2", tool="get_time", params={}, depends_on=["n1"], race_group="g")]
        return ParsedPlan(nodes=nodes, format="ideal", shape="ideal")

    monkeypatch.setattr("saber.agent.modes.react.parse_plan", bad_plan)
    model = ScriptedModel(["(a plan)", "It is 12:00."])
    agent = make_agent(model, builtin=False, tools=[zone_time],
                       settings=Settings(home=tmp_path, search={"backend": "none"}, planner={"stream": False}))
    answer = await agent.ask("what time is it", user_id="u1", mode="react")
    errors = [e for e in answer.events if isinstance(e, Error)]
    assert errors and errors[0].where == "graph" and "cannot run" in errors[0].message
    plans = [e for e in answer.events if isinstance(e, Plan)]
    assert [p.source for p in plans] == ["model", "rules"] and [n["tool"] for n in plans[1].nodes] == ["get_time"]
    assert {e.id: e.status for e in answer.events if isinstance(e, NodeDone)} == {"n1": "done"}
    assert answer.answer == "It is 12:00."


async def test_forced_tool_mode_uses_the_tool_the_query_needs(make_agent: Callable[..., Agent]) -> None:
    args = Completion(tool_calls=(ToolCall(id="c1", name="get_weather", arguments={"city": "北京"}),))
    model = ScriptedModel([args, "北京晴，21°C。"])
    agent = make_agent(model, builtin=False, tools=[zone_time, city_weather])
    answer = await agent.ask("北京天气怎么样", user_id="u1", mode="tool")
    call = next(e for e in answer.events if isinstance(e, ToolCallEvent))
    assert (call.tool_name, call.params) == ("get_weather", {"city": "北京"})


async def test_use_rag_false_keeps_the_knowledge_base_out(make_agent: Callable[..., Agent]) -> None:
    agent = make_agent(ScriptedModel(["a chat answer"]))
    assert agent.services.knowledge is not None
    agent.services.knowledge.ingest_text("Tea", "Green tea is not fermented.", source="tea.md")
    answer = await agent.ask("is green tea fermented", user_id="u1", use_rag=False)
    assert answer.mode == "chat" and not [e for e in answer.events if isinstance(e, RagResult)]


async def test_tool_mode_runs_the_place_the_query_names_not_the_one_the_model_chose(
        make_agent: Callable[..., Agent]) -> None:
    args = Completion(tool_calls=(ToolCall(id="c1", name="get_time", arguments={"timezone": "Asia/Tokyo"}),))
    model = ScriptedModel([args, args, "It is noon in New York."])  # asked again with the reason, it insists
    agent = make_agent(model, builtin=False, tools=[zone_time, city_weather])
    answer = await agent.ask("What time is it in New York?", user_id="u1", mode="tool")
    call = next(e for e in answer.events if isinstance(e, ToolCallEvent))
    assert (call.tool_name, call.params) == ("get_time", {"timezone": "New York"})
    plan = next(e for e in answer.events if isinstance(e, Plan))
    assert plan.source == "grounding" and "a place the request does not name" in plan.warnings[0]
