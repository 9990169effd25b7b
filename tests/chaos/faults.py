"""Faulty tools and models for the chaos suite, each chosen by a seeded ``random.Random``."""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Sequence
from typing import Any

from saber.llm.base import ModelError
from saber.llm.types import Message
from saber.testing import ScriptedModel
from saber.tools import Tool, ToolError


class Odd:
    """An object JSON knows nothing about."""

    def __repr__(self) -> str:
        return "<Odd>"


def _circular() -> dict[str, Any]:
    loop: dict[str, Any] = {"loop": True}
    loop["self"] = loop
    return loop


RESULTS: list[Any] = [
    "fine", {"temp": 21}, None, {("a", 1): "tuple key"}, Odd(), [Odd(), {1, 2}], "x" * 50_000, b"bytes",
]
"""What a tool may return: ordinary values, and values JSON cannot encode or that are large."""

release_threads = threading.Event()
"""Set at the end of a run: sync tools that hang wait on it (a thread cannot be cancelled)."""


def faulty_tools(rng: random.Random, count: int = 3) -> list[Tool]:
    """``count`` tools named f0.. whose behaviour (raise, hang, odd result; sync or async) is drawn from ``rng``."""
    tools = []
    for i in range(count):
        behaviour = rng.choice(["ok", "ok", "tool_error", "retryable", "crash", "hang", "odd"])
        result = rng.choice(RESULTS)
        sync = rng.random() < 0.4
        tools.append(_tool(f"f{i}", behaviour, result, sync))
    return tools


def _tool(name: str, behaviour: str, result: Any, sync: bool) -> Tool:
    def act() -> Any:
        if behaviour == "tool_error":
            raise ToolError(f"{name}: backend said no")
        if behaviour == "retryable":
            raise ToolError(f"{name}: try again", retryable=True)
        if behaviour == "crash":
            raise ValueError(f"{name}: a bug in the tool")
        if behaviour == "odd":
            return _circular()
        return result

    def run_sync(args: dict[str, Any]) -> Any:
        if behaviour == "hang":
            release_threads.wait(30)
        return act()

    async def run_async(args: dict[str, Any]) -> Any:
        if behaviour == "hang":
            await asyncio.sleep(3600)
        return act()

    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    return Tool.from_json_schema(name, f"chaos tool {name} ({behaviour})", schema, run_sync if sync else run_async)


PLANS = [
    '[{"id": "n1", "tool": "f0", "params": {"q": "a"}}, {"id": "n2", "tool": "f1", "depends_on": ["n1"]},'
    ' {"id": "n3", "tool": "f2"}]',
    '[{"id": "n1", "tool": "f0", "race_group": "r"}, {"id": "n2", "tool": "f1", "race_group": "r"},'
    ' {"id": "n3", "tool": "f2", "params": {"q": "${n1}"}, "depends_on": ["n1"]}]',
    "1. f0(\"x\")\n2. f1(\"$1\")\n3. join()",
    "I would call the tools but I'd rather chat.",
    "[" * 5000,
    '{"plan": [{"id": "n1", "tool": "nope"}]}',
    "",
]


ANSWERS: list[Any] = ["the answer", "答案", ModelError("generator endpoint down", retryable=True)]
"""What a model says when asked for an answer (empty answers and non-ModelError exceptions are issue 20's)."""


def faulty_model(seed: int) -> ScriptedModel:
    """A model whose reply depends only on the seed, the kind of call (plan or answer) and the
    request's text, never on the order concurrent requests reach it: a seed replays exactly."""

    def reply(messages: Sequence[Message]) -> Any:
        text = "\n".join(m.content or "" for m in messages)
        planner = "task planner" in text or "任务规划器" in text
        rng = random.Random(f"{seed}:{planner}:{text}")
        return rng.choice([*PLANS, ModelError("planner endpoint down")]) if planner else rng.choice(ANSWERS)

    return ScriptedModel([reply] * 10_000)
