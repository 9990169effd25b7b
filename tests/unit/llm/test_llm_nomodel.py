"""The no-model mode: NoModel never answers, answers built by rules carry the note, the factory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from saber.config import Settings
from saber.llm import Message, ModelError, NoModel, OpenAIChatModel, RetryingModel, model_from_settings
from saber.llm.base import ChatModel
from saber.llm.nomodel import (
    NO_MODEL_NOTE,
    NO_MODEL_NOTE_ZH,
    is_no_model,
    label_no_model_answer,
    no_model_note,
)
from saber.testing import ScriptedModel


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for key in list(os.environ):
        if key.startswith("SABER_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("SABER_HOME", str(tmp_path))
    return tmp_path


async def test_complete_raises_a_clear_error() -> None:
    with pytest.raises(ModelError, match="no language model is configured") as caught:
        await NoModel().complete([Message.user("hi")])
    assert "SABER_LLM_MODEL" in str(caught.value)
    assert caught.value.retryable is False


async def test_stream_raises_before_yielding_anything() -> None:
    received = []
    with pytest.raises(ModelError, match="no language model is configured"):
        async for chunk in NoModel().stream([Message.user("hi")]):
            received.append(chunk)
    assert received == []


async def test_retrying_a_missing_model_does_not_retry() -> None:
    calls = []

    async def sleep(seconds: float) -> None:
        calls.append(seconds)

    with pytest.raises(ModelError):
        await RetryingModel(NoModel(), sleep=sleep).complete([Message.user("hi")])
    assert calls == []


def test_nomodel_is_a_chat_model() -> None:
    assert isinstance(NoModel(), ChatModel)


def test_is_no_model_sees_through_wrappers() -> None:
    assert is_no_model(NoModel())
    assert is_no_model(RetryingModel(NoModel()))
    assert is_no_model(None)
    assert not is_no_model(ScriptedModel())
    assert not is_no_model(RetryingModel(ScriptedModel()))


@pytest.mark.parametrize(
    ("text", "language", "expected"),
    [
        ("What time is it in Tokyo?", None, NO_MODEL_NOTE),
        ("北京天气怎么样", None, NO_MODEL_NOTE_ZH),
        ("hello", "zh-CN", NO_MODEL_NOTE_ZH),
        ("北京", "en", NO_MODEL_NOTE),
    ],
)
def test_note_language(text: str, language: str | None, expected: str) -> None:
    assert no_model_note(text, language=language) == expected


def test_notes_say_no_language_model_was_used() -> None:
    assert "language model" in NO_MODEL_NOTE
    assert "语言模型" in NO_MODEL_NOTE_ZH


def test_label_appends_the_note_once() -> None:
    answer = "Tokyo: 14:05 (Asia/Tokyo)"
    labelled = label_no_model_answer(answer, query="What time is it in Tokyo?")
    assert labelled.startswith(answer) and labelled.endswith(NO_MODEL_NOTE)
    assert label_no_model_answer(labelled) == labelled
    zh = label_no_model_answer("北京：晴，21°C", query="北京天气")
    assert zh.endswith(NO_MODEL_NOTE_ZH)
    assert label_no_model_answer("", query="hi") == NO_MODEL_NOTE


def test_factory_without_a_model_gives_nomodel() -> None:
    model = model_from_settings(Settings.load())
    assert isinstance(model, NoModel)
    assert is_no_model(model)


def test_factory_with_a_model_gives_a_retrying_openai_model() -> None:
    settings = Settings.load(
        llm={"model": "deepseek-chat", "base_url": "http://127.0.0.1:9/v1", "api_key": "sk-test-123",
             "temperature": 0.7, "timeout": 12.5, "max_retries": 4},
    )
    model = model_from_settings(settings)
    assert isinstance(model, RetryingModel)
    assert model.max_attempts == 5
    inner = model.wrapped
    assert isinstance(inner, OpenAIChatModel)
    assert inner.model == "deepseek-chat"
    assert inner.endpoint == "http://127.0.0.1:9/v1"
    assert inner.temperature == 0.7 and inner.timeout == 12.5
    assert inner.client.api_key == "sk-test-123"
    assert inner.client.max_retries == 0
    assert not is_no_model(model)


def test_openai_key_from_the_environment_only_goes_to_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert OpenAIChatModel("gpt-4o-mini").client.api_key == "sk-from-env"
    other = OpenAIChatModel("deepseek-chat", base_url="http://127.0.0.1:9/v1")
    assert other.client.api_key != "sk-from-env"
    assert OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1", api_key="sk-given").client.api_key == "sk-given"
