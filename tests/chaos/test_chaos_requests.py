"""Seeded fault injection (issue 9): hundreds of react, tool and chat requests from several users
at once, with models that fail or answer garbage, tools that raise, hang or return what JSON
cannot encode, and cancels at random points. Invariants, for every run:

- the stream ends with exactly one ``done`` and nothing raises out of ``stream()``;
- an empty answer comes with an ``error`` event;
- after ``aclose()`` no task of the agent is left running, and no checkpoint says "running".

The seed is printed on failure; ``CHAOS_SEED=<seed>`` replays it, ``CHAOS_RUNS`` sizes it.
"""

from __future__ import annotations

import asyncio
import os
import random
from pathlib import Path

from faults import faulty_model, faulty_tools, release_threads
from saber.agent import Agent
from saber.agent.memory import MemoryService
from saber.agent.memory.sqlite_store import SQLiteMemoryStore
from saber.config import Settings
from saber.events import Done, Event
from saber.graph import SQLiteCheckpointStore
from saber.rag.embedder import HashingEmbedder
from saber.rag.engine import RagEngine
from saber.rag.store import SQLiteStore

RUNS = max(300, int(os.environ.get("CHAOS_RUNS") or 300))
"""At least 300 (the issue's floor for CI); CHAOS_RUNS may ask for more."""
BATCH = 20
USERS = ["ann", "bo", "chen", "dmitri", "eve"]
QUERIES = ["北京天气和时间", "run the tools, my password is hunter2-x", "what time is it in Tokyo", "你好",
           "search the web for oolong tea then summarise", "x" * 20_000, "[[[[{{{{", "🙂 \u202e reversed"]


def _agent(home: Path, rng: random.Random, seed: int) -> Agent:
    settings = Settings(home=home, search={"backend": "none"},
                        graph={"retry_delay": 0.0, "max_attempts": 2, "step_timeout": 0.05,
                               "max_result_chars": 10_000},
                        weather={"geocoding_url": "http://127.0.0.1:9/v1/search",
                                 "forecast_url": "http://127.0.0.1:9/v1/forecast"})
    embedder = HashingEmbedder()
    engine = RagEngine(SQLiteStore(str(settings.sqlite_path)), embedder)
    memory = MemoryService(SQLiteMemoryStore(settings.sqlite_path), embedder)
    return Agent(settings, model=faulty_model(seed), builtin=False, tools=faulty_tools(rng), knowledge=engine,
                 memory=memory)


async def _one(agent: Agent, rng: random.Random, run: int) -> tuple[list[Event], BaseException | None]:
    """One request with a random query, user, mode and cancel point; what it streamed and what escaped."""
    events: list[Event] = []
    mode = rng.choice([None, "react", "react", "tool", "chat"])
    cancel_after = rng.choice([None, None, None, 1, 3, 6])
    task_id = f"run-{run}"
    try:
        async for event in agent.stream(rng.choice(QUERIES), user_id=rng.choice(USERS), mode=mode, task_id=task_id):
            events.append(event)
            if cancel_after is not None and len(events) == cancel_after:
                agent.cancel(task_id)
    except BaseException as exc:  # the invariant: nothing escapes
        return events, exc
    return events, None


def _check(run: int, events: list[Event], escaped: BaseException | None) -> list[str]:
    problems = []
    if escaped is not None:
        problems.append(f"run {run}: {type(escaped).__name__} escaped stream(): {escaped}")
        return problems
    dones = [e for e in events if isinstance(e, Done)]
    if len(dones) != 1 or events[-1] is not dones[0]:
        problems.append(f"run {run}: expected one done at the end, got {[e.type for e in events][-5:]}")
    elif not dones[0].answer.strip() and not dones[0].interrupted and not any(e.type == "error" for e in events):
        problems.append(f"run {run}: an empty answer without an error event")
    return problems


async def _still_running(home: Path) -> list[str]:
    """Checkpointed tasks left "running" once the agent is closed: a run that did not end cleanly."""
    store = SQLiteCheckpointStore(Settings(home=home).sqlite_path)
    try:
        return [f"task {task_id}: its checkpoint is still running after aclose()"
                for task_id in await store.list_tasks(status="running")]
    finally:
        await store.close()


async def test_faulty_models_and_tools_never_break_a_request(tmp_path: Path, chaos_seed: int) -> None:
    release_threads.clear()
    problems: list[str] = []
    leftover: list[str] = []
    for start in range(0, RUNS, BATCH):
        rng = random.Random(chaos_seed + start)
        agent = _agent(tmp_path / f"home-{start}", rng, chaos_seed + start)
        before = asyncio.all_tasks()
        results = await asyncio.gather(*(_one(agent, random.Random(chaos_seed * 7919 + run), run)
                                         for run in range(start, min(start + BATCH, RUNS))))
        for run, (events, escaped) in enumerate(results, start=start):
            problems.extend(_check(run, events, escaped))
        await agent.aclose(grace=5)
        await asyncio.sleep(0)  # let cancelled tasks finish unwinding
        leftover.extend(t.get_name() for t in asyncio.all_tasks() - before if not t.done())
        problems.extend(await _still_running(tmp_path / f"home-{start}"))
    release_threads.set()
    assert not problems, f"seed {chaos_seed}: " + "\n".join(problems[:20])
    assert not leftover, f"seed {chaos_seed}: tasks outlived aclose(): {leftover[:10]}"
