"""Saber as an MCP host of npm's ``@modelcontextprotocol/server-everything`` over streamable HTTP."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from saber.agent import Agent
from saber.config.mcp import MCPServerConfig
from saber.events import NodeDone
from saber.testing import ScriptedModel
from saber.tools import ToolArgumentError, ToolError

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]  # the first test installs the servers (cached)


def everything(url: str, **extra: object) -> MCPServerConfig:
    return MCPServerConfig(name="everything", url=url, headers={"Authorization": "Bearer test-token"}, **extra)  # type: ignore[arg-type]


async def test_tools_over_http_are_registered_and_called(make_agent: Callable[..., Agent], everything_url: str) -> None:
    agent = make_agent([everything(everything_url)])
    status = (await agent.start())[0]
    assert status["state"] == "ready" and status["transport"] == "http"
    assert {"echo", "get-sum", "get-structured-content"} <= set(status["tools"])
    echo = agent.registry.get("echo")
    assert echo is not None and echo.is_mcp
    assert await echo.run({"message": "你好 [brackets] {braces}"}) == "Echo: 你好 [brackets] {braces}"
    assert await agent.registry.get("get-sum").run({"a": "2", "b": 3.5}) == "The sum of 2 and 3.5 is 5.5."  # type: ignore[union-attr]
    weather = await agent.registry.get("get-structured-content").run({"location": "Chicago"})  # type: ignore[union-attr]
    assert isinstance(weather, dict) and set(weather) >= {"temperature", "conditions", "humidity"}


async def test_arguments_are_checked_against_the_servers_schema(make_agent: Callable[..., Agent], everything_url: str) -> None:
    agent = make_agent([everything(everything_url)])
    await agent.start()
    with pytest.raises(ToolArgumentError, match="location"):
        await agent.registry.get("get-structured-content").run({"location": "Atlantis"})  # type: ignore[union-attr]
    with pytest.raises(ToolArgumentError, match="a: "):
        await agent.registry.get("get-sum").run({"a": "two", "b": 1})  # type: ignore[union-attr]


async def test_a_slow_http_tool_times_out_retryably(make_agent: Callable[..., Agent], everything_url: str) -> None:
    agent = make_agent([everything(everything_url, timeout=1.0)])
    await agent.start()
    with pytest.raises(ToolError) as slow:
        await agent.registry.get("trigger-long-running-operation").run({"duration": 5, "steps": 1})  # type: ignore[union-attr]
    assert slow.value.retryable and "did not answer within 1 s" in str(slow.value)
    assert await agent.registry.get("echo").run({"message": "still here"}) == "Echo: still here"  # type: ignore[union-attr]


async def test_a_react_plan_uses_http_tools(make_agent: Callable[..., Agent], everything_url: str) -> None:
    model = ScriptedModel([
        json.dumps([{"id": "n1", "type": "tool", "tool": "get-sum", "params": {"a": 19, "b": 23}, "depends_on": [], "race_group": None},
                    {"id": "n2", "type": "tool", "tool": "echo", "params": {"message": "sum is $n1"}, "depends_on": ["n1"],
                     "race_group": None}]),
        "It is 42.",
    ])
    agent = make_agent([everything(everything_url)], model)
    answer = await agent.ask("add 19 and 23 then echo it", mode="react")
    assert {e.id: e.status for e in answer.events if isinstance(e, NodeDone)} == {"n1": "done", "n2": "done"}
    assert "Echo: sum is The sum of 19 and 23 is 42." in model.calls[1].prompt


async def test_an_http_server_that_is_not_there(make_agent: Callable[..., Agent]) -> None:
    agent = make_agent([MCPServerConfig(name="gone", url="http://127.0.0.1:9/mcp")])
    status = (await agent.start())[0]
    assert status["state"] != "ready" and status["error"]
    assert status["tools"] == []
