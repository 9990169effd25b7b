"""Memory extraction calls the model only on a turn worth remembering, or once every N turns."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import settings_for
from saber.agent import Agent
from saber.testing import ScriptedModel


@pytest.mark.parametrize("query", ["北京天气怎么样", "what time is it in Tokyo"])
async def test_a_question_that_states_nothing_makes_no_extraction_call(
        make_agent: Callable[..., Agent], query: str) -> None:
    extractor = ScriptedModel([])  # any call fails the test: nothing is queued
    agent = make_agent(ScriptedModel(["answer"]), memory_model=extractor)
    await agent.ask(query, user_id="u1", mode="chat")
    await agent.drain()
    assert extractor.calls == []


async def test_a_stated_preference_is_extracted_by_the_model(make_agent: Callable[..., Agent]) -> None:
    extractor = ScriptedModel(['{"city": "杭州", "language": "zh"}'])
    agent = make_agent(ScriptedModel(["好的"]), memory_model=extractor)
    await agent.ask("我住在杭州，以后天气都查杭州", user_id="u1", mode="chat")
    await agent.drain()
    assert len(extractor.calls) == 1 and "以后天气都查杭州" in extractor.calls[0].prompt, "one preference call"
    memory = agent.services.memory
    assert memory is not None
    assert await memory.preferences("u1") == {"city": "杭州", "language": "zh"}


async def test_a_fact_to_remember_is_extracted_by_the_model(make_agent: Callable[..., Agent]) -> None:
    extractor = ScriptedModel(['{"memories": [{"text": "The user is vegetarian", "importance": 0.8}]}'])
    agent = make_agent(ScriptedModel(["Noted."]), memory_model=extractor)
    await agent.ask("I'm vegetarian, remember that", user_id="u1", mode="chat")
    await agent.drain()
    assert len(extractor.calls) == 1 and "I'm vegetarian, remember that" in extractor.calls[0].prompt
    memory = agent.services.memory
    assert memory is not None
    assert "The user is vegetarian" in [m.text for m in await memory.memories("u1")]


async def test_batched_extraction_calls_once_for_every_n_turns(
        make_agent: Callable[..., Agent], tmp_path: Path) -> None:
    extractor = ScriptedModel(['{"preferences": {}, "memories": [{"text": "The user plays the cello", "importance": 0.7}]}'])
    settings = settings_for(tmp_path, memory={"extraction": "batch", "extraction_batch": 3})
    agent = make_agent(ScriptedModel(["a", "b", "c"]), memory_model=extractor, settings=settings)
    for query in ("北京天气怎么样", "I practise every evening", "what time is it in Tokyo"):
        await agent.ask(query, user_id="u1", mode="chat")
        await agent.drain()
        if query != "what time is it in Tokyo":
            assert extractor.calls == [], "no call before the batch is full"
    assert len(extractor.calls) == 1, "one call, preferences and memories, for the three turns"
    assert "I practise every evening" in extractor.calls[0].prompt and "北京天气怎么样" in extractor.calls[0].prompt
    memory = agent.services.memory
    assert memory is not None
    assert "The user plays the cello" in [m.text for m in await memory.memories("u1")]


async def test_a_turn_with_a_preference_and_a_fact_costs_one_call_for_both(make_agent: Callable[..., Agent]) -> None:
    reply = ('{"preferences": {"city": "Berlin"}, '
             '"memories": [{"text": "The user is vegetarian", "importance": 0.8}]}')
    extractor = ScriptedModel([reply])
    agent = make_agent(ScriptedModel(["Noted."]), memory_model=extractor)
    answer = await agent.ask("I live in Berlin and I'm vegetarian", user_id="u1", mode="chat")
    await agent.drain()
    assert len(extractor.calls) == 1 and "Assistant: Noted." in extractor.calls[0].prompt
    memory = agent.services.memory
    assert memory is not None and answer.answer == "Noted."
    assert (await memory.preferences("u1"))["city"] == "Berlin"
    assert "The user is vegetarian" in [m.text for m in await memory.memories("u1")]
