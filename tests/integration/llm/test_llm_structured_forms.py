"""Constrained decoding in each backend's form, checked on what reaches a real HTTP server."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from saber.config import Settings
from saber.llm import Message, OpenAIChatModel, ResponseFormat
from saber.llm.factory import model_from_settings
from saber.llm.retry import RetryingModel
from saber.planner import parse_plan, plan_response_format
from saber.testing import FakeOpenAIServer
from saber.tools import tool

SCHEMA = {"type": "object", "properties": {"plan": {"type": "array"}}, "required": ["plan"]}
FMT = ResponseFormat(name="task_plan", schema=SCHEMA)
PLAN_FIELDS = ("response_format", "structured_outputs", "guided_json", "format", "json_schema")

_open: list[OpenAIChatModel] = []


@pytest.fixture(autouse=True)
async def close_models() -> AsyncIterator[None]:
    yield
    while _open:
        await _open.pop().aclose()


def model(server: FakeOpenAIServer, form: str) -> OpenAIChatModel:
    opened = OpenAIChatModel("fake-model", base_url=server.base_url, api_key="k", structured=form)
    _open.append(opened)
    return opened


def sent(server: FakeOpenAIServer, number: int = 0) -> dict[str, Any]:
    body = server.chat_requests[number].body
    return {k: body[k] for k in PLAN_FIELDS if k in body}


OPENAI_FORM = {"type": "json_schema", "json_schema": {"name": "task_plan", "schema": SCHEMA, "strict": False}}


@pytest.mark.parametrize(("form", "expected"), [
    ("openai", {"response_format": OPENAI_FORM}),
    ("vllm", {"structured_outputs": {"json": SCHEMA}}),
    ("vllm_guided", {"guided_json": SCHEMA}),
    ("ollama", {"response_format": OPENAI_FORM, "format": SCHEMA}),
    ("llamacpp", {"json_schema": SCHEMA}),
    ("off", {}),
])
async def test_each_form_sends_the_schema_its_own_way(form: str, expected: dict[str, Any]) -> None:
    async with FakeOpenAIServer(['{"plan": []}']) as server:
        result = await model(server, form).complete([Message.user("plan")], response_format=FMT)
        assert result.text == '{"plan": []}'
        assert sent(server) == expected
        plain = model(server, form)
        server.queue("hi")
        await plain.complete([Message.user("chat")])
        assert sent(server, 1) == {}  # nothing when no schema is asked for


@pytest.mark.parametrize(("owned_by", "routes", "form", "field"), [
    ("vllm", {"/version": {"version": "0.11.0"}}, "vllm", "structured_outputs"),
    ("vllm", {"/version": {"version": "0.8.5"}}, "vllm_guided", "guided_json"),
    ("llamacpp", {}, "llamacpp", "json_schema"),
    ("library", {"/api/version": {"version": "0.12.3"}}, "ollama", "format"),
    ("openai", {}, "openai", "response_format"),
])
async def test_auto_detects_the_backend_once_and_remembers(owned_by: str, routes: dict[str, Any], form: str, field: str) -> None:
    async with FakeOpenAIServer(['{"plan": []}', '{"plan": []}'], owned_by=owned_by, routes=routes) as server:
        auto = model(server, "auto")
        await auto.complete([Message.user("plan")], response_format=FMT)
        await auto.complete([Message.user("plan")], response_format=FMT)
        assert auto.structured.form == form
        assert field in sent(server, 0) and field in sent(server, 1)
        probes = [r.path for r in server.requests if r.method == "GET"]
        assert probes.count("/v1/models") == 1  # asked once, then remembered


async def test_a_backend_that_refuses_is_asked_again_without_once_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    async with FakeOpenAIServer(['{"plan": []}', '{"plan": []}'], reject_params=["json_schema"]) as server:
        llama = model(server, "llamacpp")
        with caplog.at_level(logging.WARNING, logger="saber.llm"):
            first = await llama.complete([Message.user("plan")], response_format=FMT)
        assert first.text == '{"plan": []}'
        assert [("json_schema" in r.body) for r in server.chat_requests] == [True, False]
        assert "refused constrained decoding in the llamacpp form" in caplog.text
        assert "json_schema" in (llama.structured.refused_with or "")
        await llama.complete([Message.user("plan")], response_format=FMT)
        assert len(server.chat_requests) == 3 and "json_schema" not in server.chat_requests[2].body
        server.assert_complete()


async def test_other_errors_are_not_retried_without_the_constraint() -> None:
    from saber.llm import ModelError
    from saber.testing import FakeReply
    async with FakeOpenAIServer([FakeReply.fail(400, "messages: too long for the context window")]) as server:
        with pytest.raises(ModelError, match="too long"):
            await model(server, "openai").complete([Message.user("plan")], response_format=FMT)
        assert len(server.chat_requests) == 1


async def test_the_setting_reaches_the_model_and_the_planner_reads_the_reply(monkeypatch: pytest.MonkeyPatch) -> None:
    @tool
    def get_weather(city: str) -> str:
        """Weather for a city."""
        return city

    tools = {"get_weather": get_weather}
    reply = '{"plan": [{"id": "n1", "type": "tool", "tool": "get_weather", "params": {"city": "Oslo"}, "depends_on": []}]}'
    async with FakeOpenAIServer([reply], owned_by="vllm", routes={"/version": {"version": "0.10.2"}}) as server:
        settings = Settings(llm={"model": "fake-model", "base_url": server.base_url, "api_key": "k",
                                 "structured_output": True})
        chat = model_from_settings(settings)
        assert isinstance(chat, RetryingModel)
        try:
            completion = await chat.complete([Message.user("weather in Oslo?")], response_format=plan_response_format(tools))
        finally:
            await chat.aclose()
        assert isinstance(chat.wrapped, OpenAIChatModel) and chat.wrapped.structured.form == "vllm"
        body = server.chat_requests[0].body
        assert body["structured_outputs"]["json"]["properties"]["plan"]["type"] == "array"
        plan = parse_plan(completion.text, tools)
        assert [(n.tool, n.params) for n in plan.nodes] == [("get_weather", {"city": "Oslo"})]


def test_an_unknown_form_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown structured output form 'xml'"):
        OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1", structured="xml")


async def test_auto_on_a_dead_endpoint_fails_clearly_and_asks_again_later() -> None:
    from saber.llm import ModelError
    server = FakeOpenAIServer(['{"plan": []}'], owned_by="llamacpp").start()
    port = server.port
    server.stop()  # nothing listens on the port now
    auto = OpenAIChatModel("fake-model", base_url=f"http://127.0.0.1:{port}/v1", api_key="k", structured="auto")
    _open.append(auto)
    with pytest.raises(ModelError, match="unreachable"):
        await auto.complete([Message.user("plan")], response_format=FMT)
    assert auto.structured.form is None  # not remembered: the endpoint never answered
