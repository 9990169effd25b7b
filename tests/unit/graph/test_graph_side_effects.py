"""A tool with side effects is not run again after a timeout or an error it may have acted
before (#28: a timed-out command ran three times); a tool's own time limit fires before the step
timeout and is reported as its own."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import httpx
import pytest

from saber.graph import GraphConfig, GraphRuntime, Node, NodeStatus, TaskGraph
from saber.tools import Tool, ToolError, tool
from saber.tools.system.commands import CommandPolicy, exec_tool
from saber.tools.system.files import file_tools
from saber.tools.system.sandbox import Limits
from saber.tools.system.workspace import Workspace


def acting(idempotent: bool, failures: list[BaseException | None]) -> tuple[Tool, list[int]]:
    """A tool that acts (counts a call), then fails as told (None: hangs past any timeout)."""
    calls: list[int] = []

    async def execute(args: dict[str, Any]) -> str:
        calls.append(1)
        failure = failures.pop(0) if failures else "done"
        if failure is None:
            await asyncio.Event().wait()
        if isinstance(failure, BaseException):
            raise failure
        return "done"

    return Tool.from_json_schema("act", "Acts once per call.", {}, execute, idempotent=idempotent), calls


async def run(t: Tool, **config: Any) -> Node:
    settings = {"max_attempts": 3, "retry_delay": 0.0, **config}
    result = await GraphRuntime(TaskGraph([Node(id="n1", tool=t.name)]), {t.name: t}, GraphConfig(**settings)).run()
    return result.nodes["n1"]


@pytest.mark.parametrize("failure", [None, TimeoutError(), ConnectionResetError("reset"), httpx.ReadTimeout("slow")],
                         ids=["step-timeout", "TimeoutError", "connection-lost", "read-timeout"])
async def test_a_tool_with_side_effects_runs_once_after_it_may_have_acted(failure: BaseException | None) -> None:
    t, calls = acting(False, [failure, None, None])
    node = await run(t, step_timeout=0.05)
    assert node.status is NodeStatus.FAILED and len(calls) == 1 and node.attempts == 1
    assert node.error is not None and node.error.endswith("; not retried: act has side effects and may have acted")


async def test_an_idempotent_tool_is_still_retried_after_a_timeout() -> None:
    t, calls = acting(True, [None, TimeoutError()])
    node = await run(t, step_timeout=0.05)
    assert node.status is NodeStatus.DONE and len(calls) == 3


async def test_a_tool_with_side_effects_that_says_retry_is_retried() -> None:
    t, calls = acting(False, [ToolError("busy, nothing done", retryable=True)])
    node = await run(t)
    assert node.status is NodeStatus.DONE and len(calls) == 2


async def test_a_tools_own_time_limit_fires_before_the_step_timeout() -> None:
    @tool(idempotent=False)
    async def slow_command(seconds: float) -> str:
        """Work for a while, then say so.

        Args:
            seconds: How long.
        """
        await asyncio.sleep(seconds)
        return "finished within its own limit"

    limited = dataclasses.replace(slow_command, timeout=2.0)
    graph = TaskGraph([Node(id="n1", tool="slow_command", params={"seconds": 0.3})])
    result = await GraphRuntime(graph, {"slow_command": limited}, GraphConfig(step_timeout=0.05)).run()
    assert result.nodes["n1"].status is NodeStatus.DONE
    assert result.nodes["n1"].result == "finished within its own limit"


def test_the_decorator_and_the_system_tools_declare_it(tmp_path: Path) -> None:
    @tool
    def look(place: str) -> str:
        """Look.

        Args:
            place: Where.
        """
        return place

    assert look.idempotent and look.to_dict()["idempotent"] is True
    workspace = Workspace([tmp_path])
    declared = {t.name: (t.idempotent, t.timeout) for t in file_tools(workspace, write=True)}
    assert declared == {"read_file": (True, None), "list_dir": (True, None), "search_files": (True, None),
                        "write_file": (False, None)}
    command = exec_tool(workspace, CommandPolicy(limits=Limits(wall_seconds=30.0)))
    assert (command.idempotent, command.timeout) == (False, 30.0)
