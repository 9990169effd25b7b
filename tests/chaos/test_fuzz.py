"""Hypothesis fuzzing of what reads untrusted text (issue 9): the plan parser, argument validation and
the router. Each input either works or fails with the documented error, and costs no more than
100 ms of CPU per 10 KB (CPU time of this process, so other work on the machine does not count)."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from saber.agent.router import RouteOptions, route
from saber.planner import PlanParseError, parse_plan
from saber.tools import Tool, ToolArgumentError

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def echo(args: dict[str, Any]) -> dict[str, Any]:
    return args


TOOLS = {
    "get_weather": Tool.from_json_schema("get_weather", "weather", {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city"]},
        echo),
    "search_web": Tool.from_json_schema("search_web", "search", {"type": "object", "properties": {
        "query": {"type": "string"}, "strict": {"type": "boolean"}, "tags": {"type": "array", "items": {
            "type": "string"}}}, "required": ["query"]}, echo),
}

PIECES = ["[", "]", "{", "}", '"', "'", ",", ":", "\n", "1. ", "get_weather(", ")", '"city"', "$1", "${n1}",
          '{"id": "n1", "tool": "get_weather", "params": {"city": "北京"}}', "```json\n", "```", "<think>",
          "</think>", "join()", "depends_on", "null", "true", "\\", "<tool_call>", "</tool_call>", "北京天气"]

plan_text = st.one_of(
    st.text(max_size=2000),
    st.lists(st.sampled_from(PIECES), max_size=400).map("".join),
    st.integers(1, 3000).map(lambda n: "\n".join(f'{i}. get_weather("c{i}", ${max(i - 1, 1)})' for i in range(1, n))),
    st.integers(1, 20_000).map(lambda n: "[" * n),
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=50),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=30,
)


def _bounded(size: int, fn: Callable[[], Any]) -> Any:
    """The call's own CPU time: this thread's (other tests' server threads may still be busy in this
    process), with the collector paused (a full collection of the suite's heap is not the parser's)."""
    gc.disable()
    start = time.thread_time()
    try:
        return fn()
    finally:
        spent = time.thread_time() - start
        gc.enable()
        allowed = 0.1 * max(1.0, size / 10_240) + 0.05  # 100 ms per 10 KB, and a little for the first call
        assert spent <= allowed, f"{spent * 1000:.0f} ms of CPU for {size} characters (allowed {allowed * 1000:.0f})"


@FUZZ
@given(plan_text)
def test_parse_plan_returns_a_plan_or_a_plan_parse_error(text: str) -> None:
    def parse() -> None:
        try:
            plan = parse_plan(text, TOOLS)
        except PlanParseError:
            return
        assert len(plan.nodes) <= 64
        assert all(n.tool in TOOLS for n in plan.nodes)

    _bounded(len(text), parse)


@FUZZ
@given(st.dictionaries(st.sampled_from(["city", "days", "query", "strict", "tags", "extra"]), json_values, max_size=6),
       st.sampled_from(sorted(TOOLS)))
def test_argument_validation_coerces_or_names_the_field(args: dict[str, Any], name: str) -> None:
    def validate() -> None:
        try:
            out = TOOLS[name].validate(args)
        except ToolArgumentError as exc:
            assert str(exc).startswith(f"{name}: ") and exc.errors
            return
        for key, value in out.items():
            kind = TOOLS[name].schema["properties"].get(key, {}).get("type")
            if kind == "integer":
                assert type(value) is int
            if kind == "boolean":
                assert type(value) is bool

    _bounded(len(repr(args)), validate)


@FUZZ
@given(st.one_of(st.text(max_size=3000), st.lists(st.sampled_from(
    ["天气", "weather", "北京", "time", "现在几点", "search", "知识库", "report", " ", "。", "and", "然后"]),
    max_size=500).map("".join)), st.sampled_from([None, "chat", "tool", "rag", "react"]), st.booleans())
def test_the_router_always_decides(query: str, mode: Any, loaded: bool) -> None:
    decision = _bounded(len(query), lambda: route(query, tools=list(TOOLS), knowledge_loaded=loaded,
                                                  options=RouteOptions(mode=mode)))
    assert decision.mode in ("chat", "tool", "rag", "react")
    if mode is not None:
        assert decision.mode == mode
