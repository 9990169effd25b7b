"""JointExtractor: one model call read as preferences and memories, through the single extractors' parsers."""

from __future__ import annotations

import pytest

from saber.agent.memory.joint import JointExtractor
from saber.testing import ScriptedModel


async def test_both_parts_are_read_normalised_and_gated() -> None:
    reply = ('{"preferences": {"city": "北京市", "timezone": "UTC+8", "password": "x"}, '
             '"memories": [{"text": "The user is vegetarian", "importance": 8}, {"text": 3}]}')
    preferences, memories = await JointExtractor(ScriptedModel([reply])).extract("I live in Beijing; I'm vegetarian")
    assert preferences.updates["city"] == "北京" and "password" not in preferences.updates
    assert [(m.text, m.importance, m.source) for m in memories] == [("The user is vegetarian", 0.8, "model")]


@pytest.mark.parametrize("reply", ["FAKE MODEL", "[]", '{"preferences": [], "memories": {}}', "```json\n{}\n```"])
async def test_a_reply_of_another_shape_extracts_nothing(reply: str) -> None:
    preferences, memories = await JointExtractor(ScriptedModel([reply])).extract("I live in Berlin")
    assert not preferences.updates and not preferences.rejections and memories == []


async def test_an_empty_turn_asks_nothing() -> None:
    model = ScriptedModel([])
    assert await JointExtractor(model).extract("  ") == (await JointExtractor(model).extract(""))
    assert model.calls == []
