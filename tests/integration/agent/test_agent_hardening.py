"""Issue 9 at the Agent boundary: input validation, selected_tools=[], size limits, the answer stage,
redaction wherever a query is persisted or published, tool-mode events and fallback events."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from conftest import settings_for
from saber.agent import Agent
from saber.events import Done
from saber.llm.types import Completion, Message, ResponseFormat
from saber.testing import ScriptedModel
from saber.tools import Tool, tool


@tool
def quick() -> str:
    """A step that finishes at once."""
    return "ok"


@tool
def wipe_disk() -> str:
    """A destructive tool the caller never selected."""
    raise AssertionError("wipe_disk must not run")


class GatedModel(ScriptedModel):
    """Waits before the reply to call number ``gate_call`` until the test opens ``release``."""

    def __init__(self, replies: Sequence[Any], gate_call: int) -> None:
        super().__init__(replies)
        self.gate_call = gate_call
        self.reached = asyncio.Event()
        self.release = asyncio.Event()

    async def _next(self, messages: Sequence[Message], tools: Sequence[Tool], fmt: ResponseFormat | None,
                    streamed: bool) -> Completion:
        if len(self.calls) + 1 == self.gate_call:
            self.reached.set()
            await self.release.wait()
        return await super()._next(messages, tools, fmt, streamed)


# -- item 9: validation before any event ------------------------------------------------------------

@pytest.mark.parametrize(("kwargs", "message"), [
    ({"query": b"hello"}, "query must be text .* got bytes"),
    ({"query": 42}, "query must be text"),
    ({"query": "bad \ud800 text"}, "query is not valid Unicode text: a lone surrogate at position 4"),
    ({"query": "hi\x00there"}, r"query holds a NUL character \(\\x00\) at position 2: remove it"),
    ({"query": "hi", "user_id": 7}, "user_id must be a string, got int"),
    ({"query": "hi", "user_id": "x" * 201}, "user_id is 201 characters, over the limit of 200"),
    ({"query": "hi", "user_id": " alice "}, "user_id must not start or end with spaces"),
    ({"query": "hi", "task_id": "t" * 1_000_000}, "task_id is 1,000,000 characters, over the limit of 200"),
    ({"query": "hi", "selected_tools": "quick"}, "selected_tools must be a list of tool names"),
])
async def test_bad_input_is_refused_before_any_event(make_agent: Callable[..., Agent], kwargs: dict[str, Any],
                                                     message: str) -> None:
    agent = make_agent(None, builtin=False, tools=[quick])
    query = kwargs.pop("query")
    with pytest.raises(ValueError, match=message):
        async for _ in agent.stream(query, **kwargs):
            raise AssertionError("no event may come before the error")


async def test_a_query_over_the_limit_names_the_limit(make_agent: Callable[..., Agent], tmp_path: Any) -> None:
    agent = make_agent(None, builtin=False, settings=settings_for(tmp_path, agent={"max_query_chars": 1000}))
    with pytest.raises(ValueError, match=r"query is 1,001 characters, over the limit of 1,000 .*max_query_chars"):
        await agent.ask("x" * 1001)


async def test_a_long_answer_is_cut_with_a_note(make_agent: Callable[..., Agent], tmp_path: Any) -> None:
    agent = make_agent(ScriptedModel(["y" * 500]), builtin=False, settings=settings_for(tmp_path, agent={"max_answer_chars": 100}))
    answer = await agent.ask("hello there", mode="chat")
    assert answer.answer.startswith("y" * 100) and "over the limit of 100 (setting agent.max_answer_chars)" in answer.answer


# -- item 6: an empty selection means no tool --------------------------------------------------------

async def test_an_empty_tool_selection_means_no_tool(make_agent: Callable[..., Agent]) -> None:
    plan = '[{"id": "n1", "tool": "wipe_disk"}]'
    agent = make_agent(ScriptedModel([plan, "nothing to do"]), builtin=False, tools=[wipe_disk, quick])
    answer = await agent.ask("wipe the disk", mode="react", selected_tools=[])
    assert not answer.of_type("node_start"), "no tool runs when none is selected"
    assert answer.of_type("route")[0].data["tools"] == []


# -- item 2: the answer stage is checkpointed --------------------------------------------------------

async def test_a_cancel_during_the_answer_leaves_the_task_resumable(make_agent: Callable[..., Agent]) -> None:
    model = GatedModel(['[{"id": "n1", "tool": "quick"}]', "the answer"], gate_call=2)
    agent = make_agent(model, builtin=False, tools=[quick])
    task = asyncio.create_task(agent.ask("run quick", mode="react", task_id="t-ans", user_id="u1"))
    await model.reached.wait()
    assert agent.cancel("t-ans")
    interrupted = await task
    assert interrupted.interrupted
    listed = await agent.tasks()
    assert [(t["task_id"], t["status"]) for t in listed] == [("t-ans", "answering")]
    model.release.set()
    model.gate_call = 0
    events = [e async for e in agent.resume("t-ans", user_id="u1")]
    assert not [e for e in events if e.type == "node_start"], "the finished node is not run again"
    done = events[-1]
    assert isinstance(done, Done) and done.answer == "the answer" and not done.interrupted
    model.assert_complete()
    assert await agent.tasks() == []
    assert [t["status"] for t in await agent.tasks(unfinished=False)] == ["done"]


# -- item 12: one redaction for everything persisted or published -------------------------------------

async def test_a_password_never_reaches_the_checkpoint_tasks_or_bus(make_agent: Callable[..., Agent]) -> None:
    model = ScriptedModel(['[{"id": "n1", "tool": "quick"}]', "done"])
    agent = make_agent(model, builtin=False, tools=[quick])
    published: list[dict[str, Any]] = []
    agent.bus.subscribe("agent.chat", lambda topic, payload: published.append(payload))
    query = "run quick, my password is hunter2-secret"
    await agent.ask(query, mode="react", task_id="t-pw")
    await agent.drain()
    saved = await agent.services.checkpoints.load("t-pw")  # type: ignore[union-attr]
    assert saved is not None and "hunter2" not in str(saved.meta)
    assert all("hunter2" not in str(t) for t in await agent.tasks(unfinished=False))
    assert published and all("hunter2" not in str(p) for p in published)


# -- item 13: tool mode streams what the tool emits ---------------------------------------------------

async def test_tool_mode_streams_rag_result(make_agent: Callable[..., Agent]) -> None:
    agent = make_agent(None, builtin=False)
    agent.services.knowledge.ingest_text("Tea", "Oolong tea is partly oxidised. Green tea is not oxidised.")  # type: ignore[union-attr]
    answer = await agent.ask("search the knowledge base for oolong tea", mode="tool", selected_tools=["rag_search"])
    assert answer.mode == "tool", answer.of_type("route")
    assert answer.of_type("rag_result"), [e.type for e in answer.events]


async def test_a_research_planner_failure_is_announced(make_agent: Callable[..., Agent]) -> None:
    from saber.llm.base import ModelError

    plan = '[{"id": "n1", "type": "sub_agent", "agent": "research_agent", "goal": "oolong tea"}]'
    model = ScriptedModel([plan, ModelError("planner down"), "summary", "answer"])
    agent = make_agent(model)
    agent.services.knowledge.ingest_text("Tea", "Oolong tea is partly oxidised.")  # type: ignore[union-attr]
    answer = await agent.ask("research oolong tea", mode="react")
    errors = [e.data["message"] for e in answer.of_type("error")]
    assert any("research_agent: planning the queries failed" in m and "planner down" in m for m in errors), errors


async def test_a_long_query_is_listed_by_its_start(make_agent: Callable[..., Agent]) -> None:
    agent = make_agent(ScriptedModel(['[{"id": "n1", "tool": "quick"}]', "done"]), builtin=False, tools=[quick])
    await agent.ask("run quick " + "x" * 50_000, mode="react", task_id="t-long")
    [listed] = await agent.tasks(unfinished=False)
    assert len(listed["query"]) < 400 and listed["query"].endswith("(50,010 characters)")
