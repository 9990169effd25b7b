"""Hostile input against a live agent: the worst event-loop stall while ordinary requests run beside it.

    python bench/adversarial.py

One process, one event loop, side by side in one run: a stall monitor (a task that asks to wake
every 5 ms and records how late it woke) runs while six ordinary requests (chat, tool and react,
three users) are served, alone (the baseline) and next to each hostile request:

- a 5 MB query (refused by the ``max_query_chars`` limit), and the largest query allowed (100 KB);
- a planner that answers with a 10,000-line numbered plan (capped at ``planner_max_nodes``);
- a tool that returns 10 MB of text, and one that returns a 10 MB structure (cut to
  ``max_tool_result_chars``).

Printed: the worst stall of each case (the median over three runs) and its ratio to the baseline.
The target is a worst stall under 50 ms.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from saber.agent import Agent
from saber.agent.memory import MemoryService
from saber.agent.memory.sqlite_store import SQLiteMemoryStore
from saber.config import Settings
from saber.llm.types import Message
from saber.rag.embedder import HashingEmbedder
from saber.rag.engine import RagEngine
from saber.rag.store import SQLiteStore
from saber.testing import ScriptedModel
from saber.tools import tool

TICK = 0.005
REPEATS = 3
"""Each case runs this many times and the median worst stall is printed (the machine may be busy)."""


@tool
def get_time(timezone: str = "UTC") -> str:
    """The time (a fixed string: the bench measures the loop, not the clock)."""
    return f"12:00 in {timezone}"


@tool
async def huge_text() -> str:
    """10 MB of text."""
    return TEXT


STRUCTURE = {"rows": [{"id": i, "name": f"row {i}", "tags": ["a", "b"], "note": "x" * 20} for i in range(150_000)]}
"""About 10 MB as JSON, built once up front: the bench measures Saber's handling, not the tool's own work."""
TEXT = "汉字 and text " * (10_000_000 // 13)


@tool
async def huge_structure() -> dict[str, Any]:
    """A 10 MB structure: 150,000 records."""
    return STRUCTURE


class Monitor:
    """Records how late the loop wakes a task that sleeps ``TICK`` at a time."""

    def __init__(self) -> None:
        self.lateness: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            start = time.perf_counter()
            await asyncio.sleep(TICK)
            self.lateness.append(max(0.0, time.perf_counter() - start - TICK))

    def __enter__(self) -> Monitor:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()

    def worst_ms(self) -> float:
        return max(self.lateness, default=0.0) * 1000

    def p99_ms(self) -> float:
        if len(self.lateness) < 2:
            return self.worst_ms()
        return statistics.quantiles(self.lateness, n=100, method="inclusive")[98] * 1000


def make_agent(home: Path, replies: list[Any]) -> Agent:
    settings = Settings(home=home, search={"backend": "none"},
                        weather={"geocoding_url": "http://127.0.0.1:9/v1/search",
                                 "forecast_url": "http://127.0.0.1:9/v1/forecast"},
                        graph={"step_timeout": 60.0})
    embedder = HashingEmbedder()
    engine = RagEngine(SQLiteStore(str(settings.sqlite_path)), embedder)
    memory = MemoryService(SQLiteMemoryStore(settings.sqlite_path), embedder)
    return Agent(settings, model=ScriptedModel(replies), builtin=False, tools=[get_time, huge_text, huge_structure],
                 knowledge=engine, memory=memory)


async def ordinary(agent: Agent) -> None:
    """Six ordinary requests from three users."""
    jobs = [agent.ask("hello there", user_id=u, mode="chat") for u in ("ann", "bo", "chen")]
    jobs += [agent.ask("what time is it in UTC", user_id=u, mode="react") for u in ("ann", "bo", "chen")]
    await asyncio.gather(*jobs)


def ordinary_reply(messages: Sequence[Message]) -> str:
    """The planner gets a plan, everything else a short answer: replies do not depend on the order
    in which concurrent requests reach the model."""
    text = " ".join(m.content or "" for m in messages)
    if "what time" in text and "The user's question" not in text:
        return '[{"id": "n1", "tool": "get_time", "params": {"timezone": "UTC"}}]'
    return "noon"


async def measure(home: Path, replies: list[Any], hostile: Callable[[Agent], Awaitable[Any]] | None) -> tuple[float, float, str]:
    """The ordinary requests on one agent and the hostile one on another, in the same event loop."""
    agent = make_agent(home / "ordinary", [ordinary_reply] * 12)
    other = make_agent(home / "hostile", replies)
    note = ""
    with Monitor() as monitor:
        tasks = [ordinary(agent)]
        if hostile is not None:
            tasks.append(hostile(other))
        results = await asyncio.gather(*tasks, return_exceptions=True)
        for r in results:
            if isinstance(r, BaseException):
                note = f"{type(r).__name__}: {str(r)[:70]}"
            elif isinstance(r, str):
                note = r
    await agent.aclose()
    await other.aclose()
    return monitor.worst_ms(), monitor.p99_ms(), note


FIVE_MB = "天气 weather " * (5_000_000 // 11)
LARGEST = ("北京天气 and the weather in Paris, my password is hunter2-x. " * 2000)[:100_000]


async def five_mb_query(agent: Agent) -> str:
    await agent.ask(FIVE_MB, user_id="mallory")
    return "answered"


async def largest_allowed_query(agent: Agent) -> str:
    answer = await agent.ask(LARGEST, user_id="mallory", mode="chat")
    return f"answered ({len(answer.answer)} chars)"


async def long_plan(agent: Agent) -> str:
    answer = await agent.ask("run the plan", user_id="mallory", mode="react")
    nodes = len(answer.of_type("node_start"))
    return f"{nodes} nodes ran"


async def big_text(agent: Agent) -> str:
    answer = await agent.ask("huge text", user_id="mallory", mode="react")
    done = answer.of_type("node_done")
    return f"node {done[0].data['status'] if done else '?'}"


LONG_PLAN = "\n".join(f'{i}. get_time("UTC")' for i in range(1, 10_001))


async def main() -> None:
    cases: list[tuple[str, list[Any], Callable[[Agent], Awaitable[Any]] | None]] = [
        ("warm-up (not counted)", [], None),
        ("baseline: 6 ordinary requests", [], None),
        ("+ a 5 MB query", [], five_mb_query),
        ("+ a 100 KB query (the limit)", ["a reply"], largest_allowed_query),
        ("+ a 10,000-line plan", [LONG_PLAN, "done"], long_plan),
        ("+ a 10 MB text tool result", ['[{"id": "n1", "tool": "huge_text"}]', "done"], big_text),
        ("+ a 10 MB structured result", ['[{"id": "n1", "tool": "huge_structure"}]', "done"],
         big_text),
    ]
    print(f"{'case (median of ' + str(REPEATS) + ' runs)':34} {'worst stall':>12} {'x baseline':>11}  outcome")
    baseline = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, replies, hostile) in enumerate(cases):
            stalls = []
            note = ""
            for r in range(REPEATS if i else 1):
                worst, _, note = await measure(Path(tmp) / f"h{i}-{r}", list(replies), hostile)
                stalls.append(worst)
            if i == 0:
                continue
            worst = statistics.median(stalls)
            if hostile is None:
                baseline = worst
            ratio = worst / baseline if baseline else float("nan")
            flag = "" if worst < 50 else "  (over the 50 ms target)"
            print(f"{name:34} {worst:9.1f} ms {ratio:10.1f}x  {note}{flag}")


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
