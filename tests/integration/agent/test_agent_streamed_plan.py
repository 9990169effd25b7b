"""Streamed planning end to end: a real OpenAI-compatible HTTP server streams the plan slowly and
the graph runs while it is written."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import settings_for
from saber.agent import Agent
from saber.events import Error, Event, NodeAdded, NodeDone, NodeStart, Plan
from saber.llm.openai_compat import OpenAIChatModel
from saber.testing import FakeOpenAIServer, FakeReply
from saber.testing import event_kinds as kinds
from saber.tools import tool

CALLS: list[tuple[str, str]] = []


@tool(name="get_weather")
def city_weather(city: str) -> str:
    """Weather of a city (a test tool with a fixed report)."""
    CALLS.append(("get_weather", city))
    return f"{city}: sunny, 21°C"


@tool(name="get_time")
def zone_time(timezone: str = "UTC") -> str:
    """Time in a zone (a test tool with a fixed time)."""
    CALLS.append(("get_time", timezone))
    return f"12:00 in {timezone}"


@pytest.fixture
async def fake_llm() -> AsyncIterator[FakeOpenAIServer]:
    CALLS.clear()
    async with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
async def streamed_agent(make_agent: Callable[..., Agent], fake_llm: FakeOpenAIServer,
                         tmp_path: Path) -> AsyncIterator[Callable[..., Agent]]:
    models: list[OpenAIChatModel] = []

    def factory(**overrides: Any) -> Agent:
        models.append(OpenAIChatModel(fake_llm.model, base_url=fake_llm.base_url, api_key="k"))
        return make_agent(models[-1], builtin=False, tools=[city_weather, zone_time],
                          settings=settings_for(tmp_path, **overrides))
    yield factory
    for model in models:
        await model.aclose()


def index(events: list[Event], kind: type, node_id: str | None = None) -> int:
    return next(i for i, e in enumerate(events)
                if isinstance(e, kind) and (node_id is None or getattr(e, "id", None) == node_id))


def plan_text(*nodes: dict[str, Any]) -> str:
    return json.dumps(list(nodes), ensure_ascii=False)


N1 = {"id": "n1", "tool": "get_weather", "params": {"city": "Paris"}}
N2 = {"id": "n2", "tool": "get_time", "params": {"timezone": "Europe/Paris"}}
N3 = {"id": "n3", "tool": "get_weather", "params": {"city": "Rome"}}
N4 = {"id": "n4", "tool": "get_time", "params": {"timezone": "Europe/Rome"}}


async def test_the_first_node_runs_before_the_plan_has_finished_streaming(
        fake_llm: FakeOpenAIServer, streamed_agent: Callable[..., Agent]) -> None:
    fake_llm.queue(FakeReply(text=plan_text(N1, N2, N3, N4), chunk_delay=0.02), "Paris and Rome are sunny.")
    answer = await streamed_agent().ask("weather and time in Paris and Rome", user_id="u1", mode="react")
    events = answer.events
    plan = index(events, Plan)
    assert index(events, NodeDone, "n1") < plan  # finished while the planner was still writing
    added = [e.node["id"] for e in events if isinstance(e, NodeAdded)]
    assert sorted(added) == ["n1", "n2", "n3", "n4"] and events.index(next(e for e in events if isinstance(e, NodeAdded))) \
        > index(events, type(next(e for e in events if e.type == "graph_ready")))
    final = events[plan]
    assert isinstance(final, Plan) and final.source == "model" and [n["id"] for n in final.nodes] == added
    assert {e.id: e.status for e in events if isinstance(e, NodeDone)} == dict.fromkeys(added, "done")
    assert sorted(CALLS) == sorted([("get_weather", "Paris"), ("get_time", "Europe/Paris"), ("get_weather", "Rome"),
                                    ("get_time", "Europe/Rome")])  # each once
    assert answer.answer == "Paris and Rome are sunny."


async def test_parse_after_complete_when_streaming_is_off(
        fake_llm: FakeOpenAIServer, streamed_agent: Callable[..., Agent]) -> None:
    fake_llm.queue(FakeReply(text=plan_text(N1, N2, N3)), "Sunny.")
    answer = await streamed_agent(planner={"stream": False}).ask("weather in Paris", user_id="u1", mode="react")
    assert index(answer.events, Plan) < index(answer.events, NodeStart)
    assert not any(isinstance(e, NodeAdded) for e in answer.events)
    assert fake_llm.chat_requests[0].body.get("stream") is not True


async def test_a_node_naming_a_later_written_node_waits_for_it(
        fake_llm: FakeOpenAIServer, streamed_agent: Callable[..., Agent]) -> None:
    first = {**N1, "depends_on": ["n3"]}
    fake_llm.queue(FakeReply(text=plan_text(first, N2, N3, N4), chunk_delay=0.01), "Done.")
    answer = await streamed_agent().ask("weather in Paris after Rome", user_id="u1", mode="react")
    events = answer.events
    assert index(events, NodeStart, "n2") < index(events, NodeStart, "n1")
    assert index(events, NodeDone, "n3") < index(events, NodeStart, "n1")
    n1 = next(e.node for e in events if isinstance(e, NodeAdded) and e.node["id"] == "n1")
    assert n1["depends_on"] == ["n3"]
    assert {e.id: e.status for e in events if isinstance(e, NodeDone)} == dict.fromkeys(["n1", "n2", "n3", "n4"], "done")


async def test_a_race_starts_with_its_first_member_and_one_written_after_it_was_won_loses_unrun(
        fake_llm: FakeOpenAIServer, streamed_agent: Callable[..., Agent]) -> None:
    first = {**N1, "race_group": "weather"}
    late = {**N3, "params": {"city": "Paris"}, "race_group": "weather"}
    fake_llm.queue(FakeReply(text=plan_text(first, N2, N4, late), chunk_delay=0.02), "Sunny in Paris.")
    answer = await streamed_agent().ask("weather in Paris", user_id="u1", mode="react")
    events = answer.events
    assert index(events, NodeDone, "n1") < next(i for i, e in enumerate(events)
                                                if isinstance(e, NodeAdded) and e.node["id"] == "n3")
    done = {e.id: (e.status, e.error) for e in events if isinstance(e, NodeDone)}
    assert done["n1"] == ("done", None) and done["n3"][0] == "skipped" and "lost race 'weather' to n1" in str(done["n3"][1])
    assert CALLS.count(("get_weather", "Paris")) == 1  # the late member never ran
    assert [(e.winner, e.race_group) for e in events if e.type == "race_won"] == [("n1", "weather")]


async def test_a_stream_broken_mid_plan_keeps_what_ran_and_the_rules_supply_the_rest(
        fake_llm: FakeOpenAIServer, streamed_agent: Callable[..., Agent]) -> None:
    text = plan_text(N1, N2, N3)
    cut = text.index('"city": "Rome"')
    fake_llm.queue(FakeReply(text=text[:cut], chunk_delay=0.01, stream_error="upstream reset"), "Done.")
    agent = streamed_agent(llm={"max_retries": 0})
    answer = await agent.ask("what's the weather in Paris and the time in Tokyo", user_id="u1", mode="react")
    events = answer.events
    broke = [e for e in events if isinstance(e, Error) and e.where == "planner"]
    assert broke and "stream broke after 2 node(s)" in broke[0].message and "upstream reset" in broke[0].message
    plan = next(e for e in events if isinstance(e, Plan))
    assert plan.source == "rules" and any("rule planner" in w for w in plan.warnings)
    ids = [n["id"] for n in plan.nodes]
    assert ids[:2] == ["n1", "n2"]  # what the model wrote and already ran is kept
    done = {e.id: e.status for e in events if isinstance(e, NodeDone)}
    assert done["n1"] == "done" and done["n2"] == "done" and set(done) == set(ids)
    assert CALLS.count(("get_weather", "Paris")) == 1  # not run again by the rule plan
    assert ("get_weather", "Rome") not in CALLS  # the cut node never ran
    assert plan.truncated is not None and "stream broke" in plan.truncated and plan.dropped_nodes == 1
    assert answer.answer.startswith("Done.\n\nNote: the plan was cut off (the planner stream broke")
    assert "1 planned step(s) were dropped and not run" in answer.answer
    assert agent.services.checkpoints is not None
    saved = await agent.services.checkpoints.load(answer.task_id)
    assert saved is not None and {n.id: n.status.value for n in saved.nodes} == done  # checkpointed as they ran
    assert saved.meta["plan_truncated"]["dropped_nodes"] == 1


async def test_a_planner_that_cannot_be_reached_falls_back_to_the_rule_planner(
        fake_llm: FakeOpenAIServer, streamed_agent: Callable[..., Agent]) -> None:
    fake_llm.queue(FakeReply.fail(503, "overloaded"), "Sunny.")
    answer = await streamed_agent(llm={"max_retries": 0}).ask("what's the weather in Paris", user_id="u1", mode="react")
    errors = [e for e in answer.events if isinstance(e, Error) and e.where == "planner"]
    assert errors and "after 0 node(s)" in errors[0].message and "overloaded" in errors[0].message
    plan = next(e for e in answer.events if isinstance(e, Plan))
    assert plan.source == "rules" and CALLS == [("get_weather", "Paris")]


async def test_a_final_plan_with_a_cycle_runs_with_the_cycle_broken(
        fake_llm: FakeOpenAIServer, streamed_agent: Callable[..., Agent]) -> None:
    n5 = {"id": "n5", "tool": "get_time", "params": {"timezone": "Asia/Tokyo"}, "goal": "the time in Tokyo for the user"}
    text = plan_text({**N1, "depends_on": ["n2"]}, {**N2, "depends_on": ["n1"]}, N3, N4, n5)
    fake_llm.queue(FakeReply(text=text, chunk_delay=0.02), "Done.")
    answer = await streamed_agent().ask("weather in Paris", user_id="u1", mode="react")
    events = answer.events
    plan = next(e for e in events if isinstance(e, Plan))
    assert plan.source == "model" and any(w.startswith("cycle") for w in plan.warnings)
    assert index(events, Plan) < min(index(events, NodeStart, "n1"), index(events, NodeStart, "n2"))
    assert index(events, NodeStart, "n3") < index(events, Plan)
    assert {e.id: e.status for e in events if isinstance(e, NodeDone)} == dict.fromkeys(["n1", "n2", "n3", "n4", "n5"], "done")


async def test_an_unusable_streamed_plan_uses_the_rule_planner(
        fake_llm: FakeOpenAIServer, streamed_agent: Callable[..., Agent]) -> None:
    fake_llm.queue(FakeReply(text="I would check the weather, I think.", chunk_delay=0.005), "Sunny.")
    answer = await streamed_agent().ask("what's the weather in Paris", user_id="u1", mode="react")
    plan = next(e for e in answer.events if isinstance(e, Plan))
    assert plan.source == "rules" and [n["tool"] for n in plan.nodes] == ["get_weather"]
    assert CALLS == [("get_weather", "Paris")]


async def test_an_empty_streamed_plan_is_answered_as_chat(
        fake_llm: FakeOpenAIServer, streamed_agent: Callable[..., Agent]) -> None:
    fake_llm.queue(FakeReply(text="[]", chunk_delay=0.005), "Nothing to look up.")
    answer = await streamed_agent().ask("summarize our talk", user_id="u1", mode="react")
    assert kinds(answer.events) == ["start", "route", "plan", "token", "done"]
    assert answer.answer == "Nothing to look up."


async def test_a_request_cancelled_while_the_plan_streams_leaves_nothing_running(
        fake_llm: FakeOpenAIServer, streamed_agent: Callable[..., Agent]) -> None:
    fake_llm.queue(FakeReply(text=plan_text(N1, N2, N3, N4), chunk_delay=0.05))
    agent = streamed_agent()
    events: list[Event] = []
    async for event in agent.stream("weather in Paris and Rome", user_id="u1", mode="react"):
        events.append(event)
        if isinstance(event, NodeDone) and event.id == "n1":
            assert agent.cancel(events[0].task_id)  # type: ignore[attr-defined]
    done = events[-1]
    assert done.type == "done" and done.interrupted  # type: ignore[attr-defined]
    assert agent.running() == [] and not any(isinstance(e, Plan) for e in events)
    assert ("get_time", "Europe/Rome") not in CALLS  # nothing more started after the cancel


async def test_a_task_cancelled_while_its_plan_streamed_is_planned_again_on_resume(
        fake_llm: FakeOpenAIServer, streamed_agent: Callable[..., Agent]) -> None:
    """The checkpoint then holds only the start of the plan: a resume must not answer from that
    part as if it were the whole plan (a worker killed mid-stream in the cluster test did)."""
    fake_llm.queue(FakeReply(text=plan_text(N1, N2, N3, N4), chunk_delay=0.05))
    agent = streamed_agent()
    events: list[Event] = []
    async for event in agent.stream("weather and time in Paris and Rome", user_id="u1", mode="react"):
        events.append(event)
        if isinstance(event, NodeDone) and event.id == "n1":
            assert agent.cancel(events[0].task_id)  # type: ignore[attr-defined]
    task_id = events[0].task_id  # type: ignore[attr-defined]
    assert events[-1].interrupted and ("get_time", "Europe/Rome") not in CALLS  # type: ignore[attr-defined]
    before = list(CALLS)

    fake_llm.queue(plan_text(N1, N2, N3, N4), "Paris and Rome are sunny.")
    resumed = [e async for e in agent.resume(task_id, user_id="u1")]
    plan = next(e for e in resumed if isinstance(e, Plan))
    assert sorted(n["id"] for n in plan.nodes) == ["n1", "n2", "n3", "n4"]
    assert any("planned again" in w for w in plan.warnings)
    assert {e.id: e.status for e in resumed if isinstance(e, NodeDone)}.get("n4") == "done"
    assert resumed[-1].answer == "Paris and Rome are sunny." and not resumed[-1].interrupted  # type: ignore[attr-defined]
    again = CALLS[len(before):]
    assert ("get_weather", "Paris") not in again  # finished before the cancel: kept, not run again
    assert sorted(CALLS) == sorted([("get_weather", "Paris"), ("get_time", "Europe/Paris"), ("get_weather", "Rome"),
                                    ("get_time", "Europe/Rome")])
    saved = await agent.services.checkpoints.load(task_id)  # type: ignore[union-attr]
    assert saved is not None and saved.status == "done" and not saved.meta.get("plan_incomplete")


async def test_a_finished_streamed_plan_is_saved_as_complete(
        fake_llm: FakeOpenAIServer, streamed_agent: Callable[..., Agent]) -> None:
    fake_llm.queue(FakeReply(text=plan_text(N1, N2), chunk_delay=0.01), "Sunny.")
    agent = streamed_agent()
    answer = await agent.ask("weather in Paris", user_id="u1", mode="react")
    saved = await agent.services.checkpoints.load(answer.task_id)  # type: ignore[union-attr]
    assert saved is not None and sorted(n.id for n in saved.nodes) == ["n1", "n2"]
    assert "plan_incomplete" not in saved.meta


async def test_each_node_starts_when_its_closing_brace_arrives_not_when_the_next_one_begins(
        fake_llm: FakeOpenAIServer, streamed_agent: Callable[..., Agent]) -> None:
    text = json.dumps([N1, N2, N3, N4], indent=1)  # the closing "}" of each node is a chunk of its own
    fake_llm.queue(FakeReply(text=text, chunk_delay=0.03), "Sunny.")
    answer = await streamed_agent().ask("weather and time in Paris and Rome", user_id="u1", mode="react")
    events = answer.events
    assert index(events, NodeStart, "n4") < index(events, Plan)  # the last node ran before the "]" arrived
    added = [e.node["id"] for e in events if isinstance(e, NodeAdded)]
    assert added == ["n1", "n2", "n3", "n4"] and not any(e.replaces for e in events if isinstance(e, NodeAdded))
    assert sorted(CALLS) == sorted([("get_weather", "Paris"), ("get_time", "Europe/Paris"), ("get_weather", "Rome"),
                                    ("get_time", "Europe/Rome")])
