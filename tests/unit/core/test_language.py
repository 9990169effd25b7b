"""The one set of text rules (saber.language) and that the parts which used to have their own copy
now agree with it."""

from __future__ import annotations

import pytest

from saber.language import NO_MODEL_NOTE, NO_MODEL_NOTE_ZH, has_han, is_han, language_of, no_model_note


@pytest.mark.parametrize("text, expected", [
    ("北京天气和时间", "zh"),
    ("帮我查一下 Kubernetes service 的类型", "zh"),
    ("What's the weather in 北京?", "en"),
    ("weather in Paris", "en"),
    ("", "en"),
    ("12:00 !!", "en"),
    ("㐀㐁", "zh"),          # Extension A
    ("豈更", "zh"),          # Compatibility Ideographs
    ("こんにちは", "en"),     # kana is not Han
])
def test_language_of(text: str, expected: str) -> None:
    assert language_of(text) == expected


def test_han_characters() -> None:
    assert is_han("京") and is_han("㐀") and is_han("豈")
    assert not is_han("a") and not is_han("。") and not is_han("ア") and not is_han("京京")
    assert has_han("weather in 北京") and not has_han("weather in Beijing")


def test_the_no_model_note_follows_the_language_or_the_text() -> None:
    assert no_model_note("北京天气") == NO_MODEL_NOTE_ZH
    assert no_model_note("weather") == NO_MODEL_NOTE
    assert no_model_note("weather", language="zh-CN") == NO_MODEL_NOTE_ZH
    assert no_model_note("北京", language="en") == NO_MODEL_NOTE


def test_the_planner_the_agent_and_the_no_model_mode_use_the_same_rules() -> None:
    from saber.agent import prompts
    from saber.llm import nomodel
    from saber.planner import prompt

    assert prompts.language_of is language_of and prompt.detect_language is language_of
    assert nomodel.no_model_note is no_model_note and nomodel.NO_MODEL_NOTE is NO_MODEL_NOTE
