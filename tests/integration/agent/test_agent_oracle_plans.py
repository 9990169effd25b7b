"""An "oracle" planner that always writes the right plan: the agent must run exactly its calls.

Each task is a query and the plan a competent model writes for it. The model (``ScriptedModel``)
writes that plan, streamed piece by piece or as one completion; the tools record every call.
With streamed planning on or off, the multiset of executed (tool, arguments) must be the plan's,
placeholders filled with the upstream results: nothing the rule planner adds while the plan is
still being written, no node run in a version the final plan changes, none dropped.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conftest import settings_for
from saber.agent import Agent
from saber.events import Error, Plan
from saber.testing import ScriptedModel
from saber.tools import tool

CALLS: list[tuple[str, str]] = []


def _record(name: str, **args: Any) -> None:
    CALLS.append((name, json.dumps(args, sort_keys=True, ensure_ascii=False)))


@tool(name="get_weather")
def weather(city: str) -> str:
    """Current weather of a city."""
    _record("get_weather", city=city)
    return f"{city}: sunny"


@tool(name="get_time")
def clock(timezone: str = "UTC") -> str:
    """Current time in an IANA time zone."""
    _record("get_time", timezone=timezone)
    return f"12:00 {timezone}"


HOSTS = {"2028": "Los Angeles", "2032": "Brisbane", "2024": "Paris"}


@tool(name="search_web")
def search(query: str) -> str:
    """Search the web."""
    _record("search_web", query=query)
    return next((city for year, city in HOSTS.items() if year in query), f"results for {query}")


@tool(name="find_venue")
def venue(event: str) -> str:
    """Where an event takes place, as JSON ({"city": ..., "venue": ...})."""
    _record("find_venue", event=event)
    return json.dumps({"city": "Milan", "venue": "San Siro"})


@tool(name="rag_search")
def knowledge(query: str) -> str:
    """Search the knowledge base."""
    _record("rag_search", query=query)
    return f"notes on {query}"


@tool(name="fetch_page")
def page(report: str, number: int) -> str:
    """Fetch one page of a report."""
    _record("fetch_page", report=report, number=number)
    return f"page {number} of {report}"


TOOLS = [weather, clock, search, knowledge, page, venue]


@dataclass(frozen=True)
class Task:
    name: str
    query: str
    plan: list[dict[str, Any]]
    calls: list[tuple[str, dict[str, Any]]]
    """The calls the plan makes, placeholders filled."""
    races: dict[str, list[tuple[str, dict[str, Any]]]] = field(default_factory=dict)
    """Race group → its members' calls: at least one of them runs, none twice."""


def node(i: int, tool_name: str, deps: tuple[int, ...] = (), race: str | None = None, **params: Any) -> dict[str, Any]:
    return {"id": f"n{i}", "type": "tool", "tool": tool_name, "params": params,
            "depends_on": [f"n{d}" for d in deps], "race_group": race}


TASKS = [
    Task("fan-out-en", "What's the weather in Paris and the time in Tokyo?",
         [node(1, "get_weather", city="Paris"), node(2, "get_time", timezone="Asia/Tokyo")],
         [("get_weather", {"city": "Paris"}), ("get_time", {"timezone": "Asia/Tokyo"})]),
    Task("fan-out-zh", "北京、上海和广州今天天气怎么样？",
         [node(1, "get_weather", city="北京"), node(2, "get_weather", city="上海"), node(3, "get_weather", city="广州")],
         [("get_weather", {"city": "北京"}), ("get_weather", {"city": "上海"}), ("get_weather", {"city": "广州"})]),
    Task("times-zh", "东京、纽约和伦敦现在几点？",
         [node(1, "get_time", timezone="Asia/Tokyo"), node(2, "get_time", timezone="America/New_York"),
          node(3, "get_time", timezone="Europe/London")],
         [("get_time", {"timezone": "Asia/Tokyo"}), ("get_time", {"timezone": "America/New_York"}),
          ("get_time", {"timezone": "Europe/London"})]),
    Task("weather-and-time-four-places", "Weather and local time in Rome, Berlin, Sydney and Toronto",
         [node(1, "get_weather", city="Rome"), node(2, "get_time", timezone="Europe/Rome"),
          node(3, "get_weather", city="Berlin"), node(4, "get_time", timezone="Europe/Berlin"),
          node(5, "get_weather", city="Sydney"), node(6, "get_time", timezone="Australia/Sydney"),
          node(7, "get_weather", city="Toronto"), node(8, "get_time", timezone="America/Toronto")],
         [("get_weather", {"city": "Rome"}), ("get_time", {"timezone": "Europe/Rome"}),
          ("get_weather", {"city": "Berlin"}), ("get_time", {"timezone": "Europe/Berlin"}),
          ("get_weather", {"city": "Sydney"}), ("get_time", {"timezone": "Australia/Sydney"}),
          ("get_weather", {"city": "Toronto"}), ("get_time", {"timezone": "America/Toronto"})]),
    Task("placeholder-chain-en", "Find which city hosts the 2028 Olympics, then tell me the weather there",
         [node(1, "search_web", query="2028 Olympics host city"), node(2, "get_weather", (1,), city="${n1}")],
         [("search_web", {"query": "2028 Olympics host city"}), ("get_weather", {"city": "Los Angeles"})]),
    Task("placeholder-chain-zh", "搜索2032年奥运会在哪个城市举办，再查那里的天气和时间",
         [node(1, "search_web", query="2032年奥运会 举办城市"), node(2, "get_weather", (1,), city="$n1"),
          node(3, "get_time", timezone="Australia/Brisbane")],
         [("search_web", {"query": "2032年奥运会 举办城市"}), ("get_weather", {"city": "Brisbane"}),
          ("get_time", {"timezone": "Australia/Brisbane"})]),
    Task("fan-in", "Weather in London and Paris, then search what to pack for both",
         [node(1, "get_weather", city="London"), node(2, "get_weather", city="Paris"),
          node(3, "search_web", (1, 2), query="what to pack for ${n1} and ${n2}")],
         [("get_weather", {"city": "London"}), ("get_weather", {"city": "Paris"}),
          ("search_web", {"query": "what to pack for London: sunny and Paris: sunny"})]),
    Task("dependency-written-later", "The time in Shanghai, and after that the weather in Shanghai",
         [node(1, "get_weather", (2,), city="Shanghai"), node(2, "get_time", timezone="Asia/Shanghai")],
         [("get_weather", {"city": "Shanghai"}), ("get_time", {"timezone": "Asia/Shanghai"})]),
    Task("race", "Look up K8s service types on the web and in the knowledge base, and the time in Berlin",
         [node(1, "search_web", race="search", query="K8s service types"),
          node(2, "rag_search", race="search", query="K8s service types"),
          node(3, "get_time", timezone="Europe/Berlin")],
         [("get_time", {"timezone": "Europe/Berlin"})],
         races={"search": [("search_web", {"query": "K8s service types"}), ("rag_search", {"query": "K8s service types"})]}),
    Task("numbered-pages", "Fetch pages 1 to 8 of the annual report",
         [node(i, "fetch_page", report="annual report", number=i) for i in range(1, 9)],
         [("fetch_page", {"report": "annual report", "number": i}) for i in range(1, 9)]),
    Task("numbered-pages-zh", "读取年度报告的第1到6页，并告诉我北京现在几点",
         [*(node(i, "fetch_page", report="年度报告", number=i) for i in range(1, 7)),
          node(7, "get_time", timezone="Asia/Shanghai")],
         [*(("fetch_page", {"report": "年度报告", "number": i}) for i in range(1, 7)),
          ("get_time", {"timezone": "Asia/Shanghai"})]),
    Task("chain-then-fan-out", "Which city hosts the 2024 Olympics? Give me its weather and the time in New York and Tokyo",
         [node(1, "search_web", query="2024 Olympics host city"), node(2, "get_weather", (1,), city="${n1}"),
          node(3, "get_time", timezone="America/New_York"), node(4, "get_time", timezone="Asia/Tokyo")],
         [("search_web", {"query": "2024 Olympics host city"}), ("get_weather", {"city": "Paris"}),
          ("get_time", {"timezone": "America/New_York"}), ("get_time", {"timezone": "Asia/Tokyo"})]),
    Task("placeholder-path", "Where is the 2026 Winter Olympics opening ceremony? Weather and time there",
         [node(1, "find_venue", event="2026 Winter Olympics opening ceremony"),
          node(2, "get_weather", (1,), city="${n1.city}"), node(3, "get_time", timezone="Europe/Rome")],
         [("find_venue", {"event": "2026 Winter Olympics opening ceremony"}), ("get_weather", {"city": "Milan"}),
          ("get_time", {"timezone": "Europe/Rome"})]),
    Task("three-step-chain", "Search the 2028 host city, then its weather, then search what to wear in that weather",
         [node(1, "search_web", query="2028 Olympics host city"), node(2, "get_weather", (1,), city="${n1}"),
          node(3, "search_web", (2,), query="what to wear: ${n2}")],
         [("search_web", {"query": "2028 Olympics host city"}), ("get_weather", {"city": "Los Angeles"}),
          ("search_web", {"query": "what to wear: Los Angeles: sunny"})]),
    Task("mixed-zh", "帮我查一下巴黎和伦敦的天气，再看看东京现在几点",
         [node(1, "get_weather", city="巴黎"), node(2, "get_weather", city="伦敦"), node(3, "get_time", timezone="Asia/Tokyo")],
         [("get_weather", {"city": "巴黎"}), ("get_weather", {"city": "伦敦"}), ("get_time", {"timezone": "Asia/Tokyo"})]),
    Task("crossed-places", "What time is it in London, and what's the weather in Tokyo?",
         [node(1, "get_time", timezone="Europe/London"), node(2, "get_weather", city="Tokyo")],
         [("get_time", {"timezone": "Europe/London"}), ("get_weather", {"city": "Tokyo"})]),
    Task("twelve-pages", "Fetch pages 1 to 12 of the audit report",
         [node(i, "fetch_page", report="audit report", number=i) for i in range(1, 13)],
         [("fetch_page", {"report": "audit report", "number": i}) for i in range(1, 13)]),
]


def _key(name: str, args: dict[str, Any]) -> tuple[str, str]:
    return name, json.dumps(args, sort_keys=True, ensure_ascii=False)


def assert_ran_exactly(task: Task) -> None:
    """The calls made are the plan's, each once; of a race group's members at least one ran."""
    ran = Counter(CALLS)
    for members in task.races.values():
        raced = [_key(*m) for m in members if ran[_key(*m)]]
        assert raced and all(ran[k] == 1 for k in raced), (members, CALLS)
        for k in raced:
            del ran[k]
    assert ran == Counter(_key(*c) for c in task.calls)


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("task", TASKS, ids=[t.name for t in TASKS])
async def test_the_right_plan_runs_exactly_its_calls(task: Task, streamed: bool, make_agent: Callable[..., Agent],
                                                    tmp_path: Path) -> None:
    CALLS.clear()
    model = ScriptedModel([json.dumps(task.plan, ensure_ascii=False), "Done."])
    agent = make_agent(model, builtin=False, tools=TOOLS, settings=settings_for(tmp_path, planner={"stream": streamed}))
    answer = await agent.ask(task.query, user_id="u1", mode="react")
    plan = next(e for e in answer.events if isinstance(e, Plan))
    assert plan.source == "model" and plan.truncated is None and plan.dropped_nodes == 0, plan
    assert [n["id"] for n in plan.nodes] == [n["id"] for n in task.plan], plan.warnings
    assert not [e for e in answer.events if isinstance(e, Error)]
    assert_ran_exactly(task)
    assert model.calls[0].streamed is streamed
    assert answer.answer == "Done."


@pytest.mark.parametrize("task", TASKS, ids=[t.name for t in TASKS])
def test_streamed_character_by_character_every_node_is_handed_over_once_as_the_final_plan_has_it(task: Task) -> None:
    """The finest stream there is: each node is yielded the moment its closing brace arrives,
    exactly as the final plan has it, and nothing else is (no coverage node, no later change)."""
    from saber.planner.grounding import GroundingContext, grounding
    from saber.planner.incremental import IncrementalPlanParser

    tools = {t.name: t for t in TOOLS}
    text = json.dumps(task.plan, ensure_ascii=False)
    with grounding(GroundingContext(query=task.query, tools=tools)):
        parser = IncrementalPlanParser(tools)
        at = {n.id: (i, n) for i, ch in enumerate(text) for n in parser.feed(ch)}
        final = parser.finish()
    assert final.plan is not None and not final.late and not final.changed and not final.dropped
    assert {i: n.to_dict() for i, (_, n) in at.items()} == {n.id: n.to_dict() for n in final.plan.nodes}
    closing = {n["id"]: text.index("}", text.index('"race_group"', text.index(f'"id": "{n["id"]}"'))) for n in task.plan}
    deps = {n["id"]: n["depends_on"] for n in task.plan}

    def ready(node_id: str) -> int:  # a node is complete, and so are its dependencies
        return max([closing[node_id], *(ready(d) for d in deps[node_id])])

    assert {i: pos for i, (pos, _) in at.items()} == {i: ready(i) for i in closing}


@pytest.mark.parametrize("task", TASKS, ids=[t.name for t in TASKS])
async def test_the_right_plan_streamed_over_http_runs_exactly_its_calls(task: Task, make_agent: Callable[..., Agent],
                                                                      tmp_path: Path) -> None:
    """The same oracle behind a real OpenAI-compatible HTTP server streaming the plan piece by piece."""
    from saber.llm.openai_compat import OpenAIChatModel
    from saber.testing import FakeOpenAIServer, FakeReply

    CALLS.clear()
    async with FakeOpenAIServer() as server:
        server.queue(FakeReply(text=json.dumps(task.plan, ensure_ascii=False), chunk_delay=0.002), "Done.")
        model = OpenAIChatModel(server.model, base_url=server.base_url, api_key="k")
        try:
            agent = make_agent(model, builtin=False, tools=TOOLS, settings=settings_for(tmp_path))
            answer = await agent.ask(task.query, user_id="u1", mode="react")
        finally:
            await model.aclose()
        assert server.chat_requests[0].body.get("stream") is True
    plan = next(e for e in answer.events if isinstance(e, Plan))
    assert plan.source == "model" and plan.truncated is None and not [e for e in answer.events if isinstance(e, Error)]
    assert_ran_exactly(task)
