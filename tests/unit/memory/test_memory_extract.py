"""Memory candidates from a turn: rule statements about the user, and the model's JSON."""

from __future__ import annotations

import pytest

from saber.agent.memory.extract import (
    EXPLICIT_IMPORTANCE,
    ModelMemoryExtractor,
    extract_memories,
    parse_memory_json,
)
from saber.llm.base import ModelError
from saber.testing import ScriptedModel


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我喜欢喝茶", ["我喜欢喝茶"]),
        ("我是一名程序员，在杭州工作。", ["我是一名程序员，在杭州工作"]),
        ("记住我的车牌是京A12345", ["我的车牌是京A12345"]),
        ("请记住：我对花生过敏", ["我对花生过敏"]),
        ("Remember that my sister's birthday is May 3rd.", ["my sister's birthday is May 3rd"]),
        ("I like green tea. What is the weather today?", ["I like green tea"]),
        ("I'm a vegetarian and I love spicy food!", ["I'm a vegetarian and I love spicy food"]),
        ("By the way, I have two cats", ["I have two cats"]),
        ("my favourite colour is blue", ["my favourite colour is blue"]),
        ("I work at a small robotics startup", ["I work at a small robotics startup"]),
        ("我每天早上跑步。我有一只狗叫旺财", ["我每天早上跑步", "我有一只狗叫旺财"]),
        ("I like tea. i like tea!", ["I like tea"]),
    ],
)
def test_rules_find_statements_about_the_user(text: str, expected: list[str]) -> None:
    assert [c.text for c in extract_memories(text)] == expected
    assert all(c.source == "rules" for c in extract_memories(text))


@pytest.mark.parametrize(
    "text",
    [
        "北京天气怎么样",
        "Do I like tea?",
        "我喜欢什么？",
        "I have a question about Python",
        "我有一个问题",
        "我是说你错了",
        "I'm a bit tired",
        "What time is it in Tokyo",
        "帮我调研一下 K8s service 的几种类型，写成报告保存",
        "",
    ],
)
def test_rules_skip_questions_and_requests(text: str) -> None:
    assert extract_memories(text) == []


def test_explicit_requests_matter_more_than_passing_remarks() -> None:
    [explicit] = extract_memories("记住我下周三出差")
    [remark] = extract_memories("我喜欢爵士乐")
    assert explicit.importance == EXPLICIT_IMPORTANCE
    assert explicit.importance > remark.importance


def test_parse_memory_json_is_lenient() -> None:
    got = parse_memory_json(
        '```json\n{"memories": [{"text": "User likes jazz", "importance": 0.9}, "Has a cat named Tom",'
        ' {"content": "Lives near the sea", "importance": "7"}, {"text": ""}, {"importance": 1}, 42,]}'
    )
    assert [(c.text, c.importance, c.source) for c in got] == [
        ("User likes jazz", 0.9, "model"),
        ("Has a cat named Tom", 0.5, "model"),
        ("Lives near the sea", 0.7, "model"),
    ]
    assert parse_memory_json("nothing to remember") == []
    assert parse_memory_json('[{"fact": "Allergic to nuts", "importance": 5000}]')[0].importance == 1.0


async def test_model_extractor_sends_the_turn_and_parses_the_reply() -> None:
    model = ScriptedModel(['{"memories": [{"text": "喜欢喝乌龙茶", "importance": 0.7}]}'])
    got = await ModelMemoryExtractor(model).extract("我最近爱上了乌龙茶", "好的，乌龙茶很不错。")
    assert [(c.text, c.importance) for c in got] == [("喜欢喝乌龙茶", 0.7)]
    [call] = model.calls
    assert "我最近爱上了乌龙茶" in call.prompt and "乌龙茶很不错" in call.prompt
    model.assert_complete()


async def test_model_extractor_propagates_model_errors() -> None:
    model = ScriptedModel([ModelError("boom")])
    with pytest.raises(ModelError):
        await ModelMemoryExtractor(model).extract("I like tea")
