"""Retries (attempt counting, what is retryable, backoff) and configuration checks."""

from __future__ import annotations

import random
from typing import Any

import httpx
import pytest
from graph_testkit import Recorder, fn_tool

from saber.graph import GraphConfig, GraphRuntime, Node, NodeStatus, TaskGraph
from saber.graph.retry import backoff_seconds, classify
from saber.tools import ToolArgumentError, ToolError


def flaky(failures: list[BaseException]) -> tuple[Any, list[int]]:
    calls: list[int] = []

    async def run(args: dict[str, Any]) -> str:
        calls.append(1)
        if failures:
            raise failures.pop(0)
        return "finally"

    return fn_tool("flaky", run), calls


async def run_one(tool: Any, config: GraphConfig, rec: Recorder | None = None) -> Node:
    result = await GraphRuntime(TaskGraph([Node(id="n1", tool="flaky")]), {"flaky": tool}, config, on_event=rec).run()
    return result.nodes["n1"]


async def test_retryable_errors_are_retried_until_success() -> None:
    tool, calls = flaky([ToolError("503", retryable=True), TimeoutError(), httpx.ConnectError("refused")])
    rec = Recorder()
    node = await run_one(tool, GraphConfig(max_attempts=4, retry_delay=0.001), rec)
    assert node.status is NodeStatus.DONE and node.result == "finally"
    assert node.attempts == 4 and len(calls) == 4
    assert [e.attempt for e in rec.of("node_start")] == [1, 2, 3, 4]  # type: ignore[attr-defined]
    assert len(rec.of("node_done")) == 1
    assert sum("retrying" in e.content for e in rec.of("step")) == 3  # type: ignore[attr-defined]


async def test_attempts_stop_at_max_attempts_and_the_node_fails() -> None:
    tool, calls = flaky([ToolError("503", retryable=True)] * 5)
    node = await run_one(tool, GraphConfig(max_attempts=3, retry_delay=0.001))
    assert node.status is NodeStatus.FAILED and node.error == "503" and len(calls) == 3


async def test_one_attempt_means_a_single_real_attempt() -> None:
    tool, calls = flaky([ToolError("503", retryable=True)])
    node = await run_one(tool, GraphConfig(max_attempts=1))
    assert node.status is NodeStatus.FAILED and node.result is None and len(calls) == 1
    tool, calls = flaky([])
    node = await run_one(tool, GraphConfig(max_attempts=1))
    assert node.status is NodeStatus.DONE and node.result == "finally" and len(calls) == 1


@pytest.mark.parametrize("error", [ToolArgumentError("city: field required"), ToolError("401", retryable=False),
                                   KeyError("bug")])
async def test_non_retryable_errors_fail_at_once(error: BaseException) -> None:
    tool, calls = flaky([error])
    node = await run_one(tool, GraphConfig(max_attempts=5, retry_delay=0.001))
    assert node.status is NodeStatus.FAILED and len(calls) == 1


async def test_unknown_tools_are_not_retried() -> None:
    result = await GraphRuntime(TaskGraph([Node(id="n1", tool="nope")]), {}, GraphConfig(max_attempts=5)).run()
    assert result.nodes["n1"].error == "unknown tool: nope (known: none)" and result.nodes["n1"].attempts == 1


def test_classification() -> None:
    request = httpx.Request("GET", "http://x/")
    assert classify(httpx.HTTPStatusError("", request=request, response=httpx.Response(502, request=request))).retryable
    assert not classify(httpx.HTTPStatusError("", request=request, response=httpx.Response(404, request=request))).retryable
    assert classify(ConnectionResetError("reset")).retryable
    assert classify(TimeoutError(), timeout=0.05).message == "timed out after 50 ms"
    assert classify(TimeoutError(), timeout=30).message == "timed out after 30 s"


def test_backoff_is_exponential_capped_and_jittered() -> None:
    config = GraphConfig(retry_delay=0.1, retry_max_delay=0.35, retry_jitter=0.5)
    rng = random.Random(7)
    for attempt, base in [(1, 0.1), (2, 0.2), (3, 0.35), (6, 0.35)]:
        delays = {backoff_seconds(attempt, config, rng) for _ in range(50)}
        assert all(base * 0.5 <= d <= base for d in delays) and len(delays) > 1
    exact = GraphConfig(retry_delay=0.1, retry_jitter=0.0)
    assert backoff_seconds(3, exact, rng) == pytest.approx(0.4)


@pytest.mark.parametrize("kwargs, message", [
    ({"max_parallel": 0}, "max_parallel"), ({"max_attempts": 0}, "max_attempts"),
    ({"on_failure": "ignore"}, "on_failure"), ({"retry_jitter": 2.0}, "retry_jitter"), ({"hedge": -1}, "hedge"),
    ({"step_timeout": -1}, "step_timeout"),
])
def test_bad_config_is_rejected_with_the_field_named(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        GraphConfig(**kwargs)


def test_config_round_trips_through_a_dict() -> None:
    config = GraphConfig(max_parallel=3, hedge=0.02, on_failure="continue")
    assert GraphConfig.from_dict({**config.to_dict(), "from_the_future": 1}) == config
