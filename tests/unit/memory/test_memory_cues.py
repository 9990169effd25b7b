"""Cheap cues decide whether a turn is worth a model extraction call; batching spreads the calls."""

from __future__ import annotations

import pytest

from saber.agent.memory.cues import Cues, ExtractionPolicy, memory_cues
from saber.config import Settings

QUESTIONS = [
    "北京天气怎么样",
    "what time is it in Tokyo",
    "What's the weather in Paris and the time in Tokyo?",
    "东京现在几点",
    "把北京时间下午3点换算成伦敦时间",
    "search the web for K8s service types",
    "明天上海会下雨吗？",
    "What is my name?",
    "你记得我叫什么吗？",
    "帮我查一下杭州和苏州的天气",
    "how old is my daughter?",
    "我女儿几岁了？",
    "do you remember where I live?",
]
STATEMENTS = [
    "我住在杭州，以后天气都查杭州",
    "I'm vegetarian, remember that",
    "I live in Berlin",
    "我喜欢喝绿茶",
    "call me Alex",
    "叫我小王就行",
    "以后都用英文回答我",
    "from now on reply in English",
    "please use Fahrenheit from now on",
    "记住：我的生日是5月3日",
    "我对花生过敏",
    "I don't eat pork. What's good for dinner in Shanghai?",
    "I moved to Shenzhen last month",
    "我搬到深圳了",
    "my daughter turns five next week",
    "我女儿今年五岁",
]


@pytest.mark.parametrize("text", QUESTIONS)
def test_a_question_that_states_nothing_has_no_cue(text: str) -> None:
    assert not memory_cues(text).any


@pytest.mark.parametrize("text", STATEMENTS)
def test_a_statement_about_the_user_has_a_cue(text: str) -> None:
    assert memory_cues(text).any


def test_a_preference_is_one_call_a_fact_another() -> None:
    assert memory_cues("我住在杭州，以后天气都查杭州") == Cues(preference=True, fact=False)
    assert memory_cues("from now on reply in English") == Cues(preference=True, fact=False)
    assert memory_cues("I'm allergic to peanuts") == Cues(preference=False, fact=True)
    assert memory_cues("remember that I live in Berlin") == Cues(preference=True, fact=True)


def test_cues_mode_calls_the_model_only_on_a_statement() -> None:
    policy = ExtractionPolicy("cues")
    assert not policy.decide("u1", "北京天气怎么样").any
    decided = policy.decide("u1", "I'm vegetarian, remember that")
    assert decided.memories and decided.text == "I'm vegetarian, remember that" and not decided.batched
    assert not policy.decide("u1", "I'm vegetarian, remember that", rememberable=False).memories


def test_batch_mode_calls_once_every_n_turns_per_user_over_those_turns() -> None:
    policy = ExtractionPolicy("batch", batch=3)
    decided = [policy.decide("u1", f"turn {i}") for i in range(1, 7)]
    assert [d.any for d in decided] == [False, False, True, False, False, True]
    assert decided[2].text == "turn 1\nturn 2\nturn 3" and decided[2].batched
    assert decided[5].text == "turn 4\nturn 5\nturn 6"
    assert not policy.decide("u2", "turn 1").any, "another user's turns are counted apart"


def test_batch_mode_leaves_out_a_turn_that_failed_the_gates() -> None:
    policy = ExtractionPolicy("batch", batch=2)
    assert not policy.decide("u1", "my password is hunter22", rememberable=False).any
    assert not policy.decide("u1", "I like tea").any
    assert policy.decide("u1", "I like jazz").text == "I like tea\nI like jazz"


def test_every_turn_and_off() -> None:
    assert ExtractionPolicy("every_turn").decide("u1", "北京天气怎么样").memories
    assert not ExtractionPolicy("off").decide("u1", "I'm vegetarian, remember that").any


def test_bad_settings_are_named() -> None:
    with pytest.raises(ValueError, match="unknown memory extraction mode 'sometimes'"):
        ExtractionPolicy("sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least 1"):
        ExtractionPolicy("batch", batch=0)
    with pytest.raises(ValueError, match=r"memory\.extraction"):
        Settings(memory={"extraction": "sometimes"})  # type: ignore[arg-type]
