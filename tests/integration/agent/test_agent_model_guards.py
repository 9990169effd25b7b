"""A badly behaved model in the loop (scripted like SmolLM2-135M): the request stays bounded and honest."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from saber.agent import Agent
from saber.agent.context import Turn
from saber.agent.deadline import within_deadline
from saber.config import Settings
from saber.events import Error, Plan, Token
from saber.llm.types import Completion, Message, StreamChunk, StreamEnd, TextDelta
from saber.testing import ScriptedModel
from saber.tools import tool


@tool(name="get_weather")
def city_weather(city: str) -> str:
    """Weather of a city (a test tool with a fixed report)."""
    return f"{city}: sunny, 21°C"


@tool(name="get_time")
def city_time(city: str = "UTC") -> str:
    """Time in a city (a test tool with a fixed time)."""
    return f"12:00 in {city}"


TOOLS = [city_weather, city_time]


class Misbehaving:
    """A custom ChatModel (not a ScriptedModel): plans from a queue, streams from a generator factory."""

    name = "custom"

    def __init__(self, plans: Sequence[Any] = (), streams: Sequence[Any] = ()) -> None:
        self.plans = list(plans)
        self.streams = list(streams)

    async def complete(self, messages: Sequence[Message], *, tools: Any = (), response_format: Any = None,
                       temperature: float | None = None) -> Completion:
        reply = self.plans.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        if reply == "hang":
            await asyncio.Event().wait()
        return Completion(text=reply)

    async def stream(self, messages: Sequence[Message], *, tools: Any = (), temperature: float | None = None) -> AsyncIterator[StreamChunk]:
        reply = self.streams.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        for piece in reply:
            yield TextDelta(content=piece)
            await asyncio.sleep(0)
        yield StreamEnd(finish_reason="stop")


def errors(events: Sequence[Any]) -> list[Error]:
    return [e for e in events if isinstance(e, Error)]


def tokens(events: Sequence[Any]) -> str:
    return "".join(e.content for e in events if isinstance(e, Token))


@pytest.mark.parametrize("exc", [ValueError("bad"), RuntimeError("boom"), TimeoutError(), ConnectionResetError("reset")])
async def test_any_exception_from_a_custom_planner_falls_back_to_the_rules(make_agent: Callable[..., Agent], exc: Exception) -> None:
    model = Misbehaving(plans=[exc], streams=[exc])
    answer = await make_agent(model, builtin=False, tools=TOOLS).ask("What's the weather in Paris?", mode="react")
    plan = next(e for e in answer.events if isinstance(e, Plan))
    assert plan.source == "rules" and type(exc).__name__ in plan.warnings[0]
    assert {e.where for e in errors(answer.events)} == {"planner", "generator"}
    assert "Paris: sunny, 21°C" in answer.answer and "failed" in answer.answer
    assert answer.answer == tokens(answer.events)


async def test_a_hanging_custom_model_is_bounded_by_the_call_limit(make_agent: Callable[..., Agent], tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, search={"backend": "none"}, llm={"timeout": 0.2}, planner={"stream": False})
    agent = make_agent(Misbehaving(plans=["hang"], streams=[itertools.repeat("你好！")]), builtin=False, tools=TOOLS, settings=settings)
    answer = await agent.ask("What's the weather in Paris?", mode="react")
    assert "within 0.2s" in errors(answer.events)[0].message
    assert "Paris: sunny, 21°C" in answer.answer and "not usable" in answer.answer


async def test_the_prompt_example_city_is_never_run(make_agent: Callable[..., Agent]) -> None:
    copied = json.dumps([{"id": "n1", "type": "tool", "tool": "get_weather", "params": {"city": "Shanghai"}, "depends_on": []}])
    model = ScriptedModel([copied, "In Paris it is sunny and 21°C; in Tokyo it is 12:00."])
    answer = await make_agent(model, builtin=False, tools=TOOLS).ask("What time is it in Tokyo and what's the weather in Paris?")
    plan = next(e for e in answer.events if isinstance(e, Plan))
    assert "Shanghai" not in json.dumps(plan.nodes)
    assert any("copied example" in w for w in plan.warnings)
    assert "Shanghai" not in model.calls[1].prompt and "sunny" in model.calls[1].prompt


async def test_an_echoed_prompt_is_not_the_answer(make_agent: Callable[..., Agent]) -> None:
    plan = json.dumps([{"id": "n1", "type": "tool", "tool": "get_weather", "params": {"city": "Paris"}, "depends_on": []}])
    echo = "The user's question: What's the weather in Paris?\n\nSteps run and their results: n1 get_weather done"
    answer = await make_agent(ScriptedModel([plan, echo]), builtin=False, tools=TOOLS).ask("What's the weather in Paris?", mode="react")
    assert [e.where for e in errors(answer.events)] == ["generator"] and "echoed its prompt" in errors(answer.events)[0].message
    assert answer.answer.startswith("Note: the language model's answer was not usable (the model echoed its prompt")
    assert "Paris: sunny, 21°C" in answer.answer and "The user's question" not in answer.answer
    assert answer.model is None


async def test_an_empty_chat_answer_is_said_with_an_error_event(make_agent: Callable[..., Agent]) -> None:
    answer = await make_agent(ScriptedModel(["   "])).ask("hello there", mode="chat")
    assert [e.message for e in errors(answer.events)] == ["the model's answer was not usable: the model returned an empty answer"]
    assert answer.answer == "Sorry, the language model gave no answer (the model returned an empty answer)."


async def test_a_chat_repetition_loop_is_cut_and_the_answer_says_so(make_agent: Callable[..., Agent]) -> None:
    answer = await make_agent(Misbehaving(streams=[itertools.repeat("你好！")])).ask("你好", mode="chat")
    assert "repeating" in errors(answer.events)[0].message
    assert answer.answer.startswith("你好！你好！") and answer.answer.endswith("）") and "回答被截断" in answer.answer
    assert len(answer.answer) < 500


async def test_the_request_deadline_ends_the_request_with_what_it_has(make_agent: Callable[..., Agent]) -> None:
    agent = make_agent(ScriptedModel())
    sent: list[Any] = []

    async def emit(event: Any) -> None:
        sent.append(event)

    turn = Turn(task_id="t", user_id="u", query="q", lang="en", emit=emit, model=agent.model, tools={}, services=agent.services,
                streamed=["partial answer"])
    answer = await within_deadline(turn, lambda: asyncio.Event().wait(), 0.05)  # type: ignore[arg-type, return-value]
    assert answer == "partial answer\n\n(The request reached its 0.05s deadline; the answer stops here.)"
    assert [e.where for e in errors(sent)] == ["deadline"]


async def test_an_empty_answer_from_any_path_is_never_silent(make_agent: Callable[..., Agent]) -> None:
    agent = make_agent(ScriptedModel())
    sent: list[Any] = []

    async def emit(event: Any) -> None:
        sent.append(event)

    turn = Turn(task_id="t", user_id="u", query="q", lang="en", emit=emit, model=agent.model, tools={}, services=agent.services)

    async def nothing() -> str:
        return ""

    answer = await within_deadline(turn, nothing, 10)
    assert answer == "Sorry, this request produced no answer."
    assert [e.where for e in errors(sent)] == ["answer"] and tokens(sent) == answer


async def test_every_call_to_an_openai_endpoint_carries_max_tokens_for_its_purpose(make_agent: Callable[..., Agent], tmp_path: Path) -> None:
    from saber.testing import FakeOpenAIServer

    plan = json.dumps([{"id": "n1", "type": "tool", "tool": "get_weather", "params": {"city": "Paris"}, "depends_on": []}])
    with FakeOpenAIServer([plan, "Paris is sunny, 21°C."]) as server:
        settings = Settings(home=tmp_path, search={"backend": "none"},
                            llm={"base_url": server.base_url, "model": "fake-model",
                                 "max_tokens_planner": 300, "max_tokens_answer": 200})
        agent = make_agent(None, builtin=False, tools=TOOLS, settings=settings, memory_model=None)
        answer = await agent.ask("What's the weather in Paris?", mode="react")
        bodies = [r.body for r in server.requests if r.method == "POST"]
    assert answer.answer == "Paris is sunny, 21°C."
    # the plan streams too (streamed planning), each call with its own purpose's max_tokens
    assert [(b.get("stream", False), b["max_tokens"]) for b in bodies] == [(True, 300), (True, 200)]


@tool(name="get_weather")
def failing_weather(city: str) -> str:
    """Weather of a city (a test tool whose service is down)."""
    from saber.tools import ToolError

    raise ToolError(f"the weather service could not be reached for {city}")


@pytest.mark.parametrize(("query", "tail"), [
    ("What's the weather in Paris and the time in Tokyo?",
     "\n\nSteps that failed: get_weather (Paris): The weather service could not be reached"),
    ("巴黎天气和东京时间", "\n\n失败的步骤：get_weather（巴黎）: 天气服务暂时无法访问"),
])
async def test_a_model_answer_that_leaves_out_a_failed_step_gets_it_named(
        make_agent: Callable[..., Agent], query: str, tail: str) -> None:
    city = "Paris" if query.isascii() else "巴黎"
    plan = json.dumps([{"id": "n1", "tool": "get_weather", "params": {"city": city}},
                       {"id": "n2", "tool": "get_time", "params": {"city": "Tokyo"}}])
    model = ScriptedModel([plan, "[]", "It is 12:00 in Tokyo."])  # the replan after the failure adds nothing
    answer = await make_agent(model, builtin=False, tools=[failing_weather, city_time]).ask(query, mode="react")
    assert answer.answer == "It is 12:00 in Tokyo." + tail
    assert answer.answer == tokens(answer.events) and answer.model is not None


async def test_a_model_answer_after_a_failed_tool_in_tool_mode_names_it(make_agent: Callable[..., Agent]) -> None:
    from saber.llm.types import ToolCall

    args = Completion(tool_calls=(ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"}),))
    model = ScriptedModel([args, "Have a nice day in Paris!"])
    answer = await make_agent(model, builtin=False, tools=[failing_weather]).ask("weather in Paris?", mode="tool")
    assert answer.answer.startswith("Have a nice day in Paris!\n\nSteps that failed: get_weather (Paris): ")


@pytest.mark.parametrize("said", ["Paris weather is unavailable right now; it is 12:00 in Tokyo.",
                                  "巴黎天气查询失败；东京现在 12:00。"])
async def test_a_model_answer_that_owns_up_to_the_failure_is_left_as_it_is(make_agent: Callable[..., Agent],
                                                                           said: str) -> None:
    city = "Paris" if said.isascii() else "巴黎"
    plan = json.dumps([{"id": "n1", "tool": "get_weather", "params": {"city": city}},
                       {"id": "n2", "tool": "get_time", "params": {"city": "Tokyo"}}])
    answer = await make_agent(ScriptedModel([plan, "[]", said]), builtin=False,
                              tools=[failing_weather, city_time]).ask("weather in Paris, time in Tokyo", mode="react")
    assert answer.answer == said
