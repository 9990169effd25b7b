"""Saber as an MCP host of the real ``mcp-server-time`` (PyPI) over stdio."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import children_running, python_server, settings_for, signal_server, time_config

from saber.agent import Agent
from saber.config.mcp import MCPServerConfig
from saber.events import NodeDone, Plan, Route, ToolCallEvent
from saber.mcp.connection import MCPConnection
from saber.testing import ScriptedModel
from saber.tools import ToolArgumentError, ToolError, tool

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]  # the first test installs the servers (cached)

CHANGING = str(Path(__file__).with_name("changing_server.py"))


def plan(*nodes: dict[str, Any]) -> str:
    return json.dumps([{"type": "tool", "depends_on": [], "race_group": None, **n} for n in nodes])


async def test_the_servers_tools_are_registered_as_mcp_tools(make_agent: Callable[..., Agent], time_server: str) -> None:
    agent = make_agent([time_config(time_server)])
    status = await agent.start()
    # Saber has its own convert_time: the server's is registered under its server's name, never over it
    assert [(s["name"], s["state"], s["tools"]) for s in status] == [("time", "ready", ["get_current_time", "time__convert_time"])]
    assert agent.registry.get("time__convert_time").is_mcp  # type: ignore[union-attr]
    assert not agent.registry.get("convert_time").is_mcp  # type: ignore[union-attr]
    current = agent.registry.get("get_current_time")
    assert current is not None and current.is_mcp
    assert [(p.name, p.required) for p in current.parameters] == [("timezone", True)]
    assert current.to_openai()["function"]["parameters"]["required"] == ["timezone"]
    assert agent.registry.get("get_time") is not None and not agent.registry.get("get_time").is_mcp  # type: ignore[union-attr]


async def test_a_react_plan_calls_the_mcp_tool(make_agent: Callable[..., Agent], time_server: str) -> None:
    model = ScriptedModel([
        plan({"id": "n1", "tool": "get_current_time", "params": {"timezone": "Asia/Tokyo"}},
             {"id": "n2", "tool": "time__convert_time",
              "params": {"source_timezone": "Asia/Tokyo", "time": "09:30", "target_timezone": "Europe/London"}}),
        "东京和伦敦的时间如上。",
    ])
    agent = make_agent([time_config(time_server)], model)
    answer = await agent.ask("东京现在几点，东京 9:30 是伦敦几点", mode="react")
    done = {e.id: e for e in answer.events if isinstance(e, NodeDone)}
    assert {k: v.status for k, v in done.items()} == {"n1": "done", "n2": "done"}
    generator_prompt = model.calls[1].prompt
    assert "Asia/Tokyo" in generator_prompt and "Europe/London" in generator_prompt and "00:30" in generator_prompt
    assert "get_current_time" in model.calls[0].prompt  # the planner was shown the MCP tools
    model.assert_complete()


async def test_tool_mode_routes_a_query_to_the_mcp_tool(make_agent: Callable[..., Agent], time_server: str) -> None:
    agent = make_agent([time_config(time_server)], builtin=False)
    answer = await agent.ask("现在东京几点")
    route = next(e for e in answer.events if isinstance(e, Route))
    assert (route.mode, route.rule, route.tools) == ("tool", "tool-index:get_current_time", ["get_current_time"])
    call = next(e for e in answer.events if isinstance(e, ToolCallEvent))
    assert call.params == {"timezone": "Asia/Tokyo"} and call.error is None
    assert call.tool_result["timezone"] == "Asia/Tokyo" and call.tool_result["datetime"].endswith("+09:00")
    assert "+09:00" in answer.answer


async def test_explicit_tool_mode_with_a_selected_mcp_tool(make_agent: Callable[..., Agent], time_server: str) -> None:
    agent = make_agent([time_config(time_server)])
    answer = await agent.ask("what time is it in Paris", mode="tool", selected_tools=["get_current_time"])
    call = next(e for e in answer.events if isinstance(e, ToolCallEvent))
    assert call.tool_name == "get_current_time" and call.params == {"timezone": "Europe/Paris"}
    assert call.tool_result["timezone"] == "Europe/Paris"


async def test_bad_arguments_are_rejected_before_the_server_is_called(
    make_agent: Callable[..., Agent], time_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    real_call = MCPConnection.call

    async def counting(self: MCPConnection, name: str, arguments: dict[str, Any]) -> Any:
        calls.append((name, arguments))
        return await real_call(self, name, arguments)

    monkeypatch.setattr(MCPConnection, "call", counting)
    agent = make_agent([time_config(time_server)])
    await agent.start()
    current = agent.registry.get("get_current_time")
    assert current is not None
    with pytest.raises(ToolArgumentError, match="timezone: field required"):
        await current.run({})
    with pytest.raises(ToolArgumentError, match="timezone"):
        await current.run({"timezone": ["Asia/Tokyo"]})
    assert calls == []
    assert (await current.run({"timezone": "UTC"}))["timezone"] == "UTC"
    assert calls == [("get_current_time", {"timezone": "UTC"})]


async def test_the_servers_own_errors_and_unknown_tools(make_agent: Callable[..., Agent], time_server: str) -> None:
    agent = make_agent([time_config(time_server)])
    await agent.start()
    with pytest.raises(ToolError) as bad_zone:
        await agent.registry.get("get_current_time").run({"timezone": "Mars/Olympus"})  # type: ignore[union-attr]
    assert "Mars/Olympus" in str(bad_zone.value) and not bad_zone.value.retryable
    with pytest.raises(ToolError) as unknown:
        await agent.mcp.connections["time"].call("get_future_time", {})
    assert "get_future_time" in str(unknown.value) and not unknown.value.retryable


async def test_a_plan_naming_an_unknown_tool_is_reported(make_agent: Callable[..., Agent], time_server: str) -> None:
    model = ScriptedModel([plan({"id": "n1", "tool": "get_future_time", "params": {}}), "no tool could answer"])
    agent = make_agent([time_config(time_server)], model)
    answer = await agent.ask("what time will it be", mode="react")
    shown = next(e for e in answer.events if isinstance(e, Plan))
    assert any("get_future_time" in w for w in shown.warnings)
    assert not [e for e in answer.events if isinstance(e, NodeDone) and e.tool == "get_future_time"]


async def test_a_hanging_server_times_out_retryably(make_agent: Callable[..., Agent], time_server: str) -> None:
    agent = make_agent([time_config(time_server, timeout=1.0)])
    await agent.start()
    current = agent.registry.get("get_current_time")
    assert current is not None
    signal_server("mcp-server-time", signal.SIGSTOP)
    try:
        with pytest.raises(ToolError) as hung:
            await current.run({"timezone": "UTC"})
        assert hung.value.retryable and "did not answer within 1 s" in str(hung.value)
    finally:
        signal_server("mcp-server-time", signal.SIGCONT)
    assert (await current.run({"timezone": "UTC"}))["timezone"] == "UTC"


async def test_a_server_killed_mid_call_fails_the_call_and_comes_back(
    make_agent: Callable[..., Agent], time_server: str
) -> None:
    agent = make_agent([time_config(time_server, timeout=60.0)])
    await agent.start()
    connection = agent.mcp.connections["time"]
    current = agent.registry.get("get_current_time")
    assert current is not None
    old_pid = signal_server("mcp-server-time", signal.SIGSTOP)
    call = asyncio.create_task(current.run({"timezone": "UTC"}))
    await _until_in_flight(connection)
    signal_server("mcp-server-time", signal.SIGKILL)
    async with asyncio.timeout(20):  # a guard against a hang, not a timing claim
        with pytest.raises(ToolError) as lost:
            await call
    assert lost.value.retryable and "closed the connection" in str(lost.value)
    assert await connection.wait_ready(30)
    assert connection.restarts == 1 and children_running("mcp-server-time") != [old_pid]
    assert "get_current_time" in agent.registry
    again = agent.registry.get("get_current_time")
    assert again is not None and (await again.run({"timezone": "UTC"}))["timezone"] == "UTC"
    assert (await current.run({"timezone": "UTC"}))["timezone"] == "UTC"  # an old snapshot's tool works too


async def _until_in_flight(connection: MCPConnection) -> None:
    """Wait until the session has sent the request and waits for its answer."""
    dispatcher = connection._session._dispatcher  # type: ignore[union-attr]
    async with asyncio.timeout(10):
        while not dispatcher._pending:  # noqa: ASYNC110 (the SDK has no event for "request sent")
            await asyncio.sleep(0.01)


async def test_a_server_that_exits_at_start_up_is_reported_and_the_rest_works(
    make_agent: Callable[..., Agent], time_server: str
) -> None:
    broken = python_server("import sys; sys.stderr.write('cannot read /etc/broken.conf'); sys.exit(3)")
    agent = make_agent([broken, time_config(time_server)])
    status = {s["name"]: s for s in await agent.start()}
    assert status["time"]["state"] == "ready"
    assert status["broken"]["state"] in ("restarting", "failed") and status["broken"]["tools"] == []
    assert "cannot read /etc/broken.conf" in status["broken"]["error"]
    answer = await agent.ask("现在东京几点", selected_tools=["get_current_time"])
    call = next(e for e in answer.events if isinstance(e, ToolCallEvent))
    assert call.tool_result["timezone"] == "Asia/Tokyo"


async def test_a_server_that_answers_garbage_does_not_hold_up_start(make_agent: Callable[..., Agent], tmp_path: Path) -> None:
    garbage = python_server("import time\nprint('hello, I am not JSON-RPC', flush=True)\ntime.sleep(60)")
    silent = MCPServerConfig(name="silent", command=sys.executable, args=["-c", "import time; time.sleep(60)"])
    agent = make_agent([], settings=settings_for(tmp_path, [garbage, silent], mcp={"startup_timeout": 3.0}))
    status = {s["name"]: s for s in await agent.start()}  # returns when the start-up time is up, saying why
    assert status["broken"]["state"] != "ready"
    assert status["broken"]["error"] == "answered with output that is not JSON-RPC: 'hello, I am not JSON-RPC'"
    assert status["silent"]["state"] != "ready" and status["silent"]["error"] == "no answer within 3 s"
    answer = await agent.ask("现在东京几点")  # the built-ins work meanwhile
    assert next(e for e in answer.events if isinstance(e, ToolCallEvent)).tool_name == "get_time"
    for name in ("broken", "silent"):  # they are tried again, and the list (the API's too) still says why
        await _until_restarted(agent.mcp.connections[name])
    listed = {s["name"]: s for s in agent.mcp.list()}
    assert listed["broken"]["state"] == "restarting" and "not JSON-RPC" in listed["broken"]["error"]
    assert listed["silent"]["state"] == "restarting" and listed["silent"]["error"] == "no answer within 3 s"


async def _until_restarted(connection: MCPConnection) -> None:
    async with asyncio.timeout(60):  # a guard against a hang, not a timing claim
        while connection.restarts == 0:  # noqa: ASYNC110 (the connection has no event for "trying again")
            await asyncio.sleep(0.05)


@tool(name="get_current_time")
def my_clock() -> str:
    """The application's own clock."""
    return "12:00"


async def test_names_that_collide_get_the_server_prefix(make_agent: Callable[..., Agent], time_server: str) -> None:
    agent = make_agent([time_config(time_server), time_config(time_server, name="clock", prefix="clock_")],
                       tools=[my_clock])
    await agent.start()
    names = set(agent.registry.names())
    assert {"time__get_current_time", "convert_time", "clock_get_current_time", "clock_convert_time"} <= names
    assert not agent.registry.get("get_current_time").is_mcp  # type: ignore[union-attr]
    moved = agent.registry.get("time__get_current_time")
    assert moved is not None and (await moved.run({"timezone": "UTC"}))["timezone"] == "UTC"


async def test_same_names_from_two_servers(make_agent: Callable[..., Agent], time_server: str) -> None:
    agent = make_agent([time_config(time_server), time_config(time_server, name="clock")], builtin=False)
    await agent.start()
    names = set(agent.registry.names())
    first = {"get_current_time", "convert_time"}
    assert first <= names
    assert ({"clock__get_current_time", "clock__convert_time"} <= names) != ({"time__get_current_time", "time__convert_time"} <= names)


async def test_an_allow_list_keeps_only_the_named_tools(make_agent: Callable[..., Agent], time_server: str) -> None:
    agent = make_agent([time_config(time_server, tools=["get_current_time"])])
    await agent.start()
    assert "get_current_time" in agent.registry and "time__convert_time" not in agent.registry
    assert not agent.registry.get("convert_time").is_mcp  # type: ignore[union-attr]  # the built-in stays


async def test_tools_list_changed_updates_the_registry(make_agent: Callable[..., Agent]) -> None:
    changed = asyncio.Event()
    agent = make_agent([MCPServerConfig(name="changing", command=sys.executable, args=[CHANGING])])
    await agent.start()
    agent.mcp.on_tools_changed(changed.set)
    before = agent.registry.snapshot()
    assert "add_double" in before and "double" not in before
    await agent.registry.get("add_double").run({})  # type: ignore[union-attr]
    async with asyncio.timeout(20):
        await changed.wait()
    assert "double" in agent.registry and "double" not in before  # a snapshot taken before is unchanged
    assert await agent.registry.get("double").run({"x": "21"}) == {"result": 42}  # type: ignore[union-attr]


async def test_disabled_servers_are_not_started(make_agent: Callable[..., Agent], time_server: str) -> None:
    agent = make_agent([time_config(time_server, enabled=False)])
    status = await agent.start()
    assert status[0]["state"] == "disabled" and "get_current_time" not in agent.registry
    assert children_running("mcp-server-time") == []
