"""Run (or resume) one react task in its own process, printing events as JSON lines.

    python agent_crash_script.py HOME SIDE_FILE TASK_ID first|midplan|resume|resume-replan

Used by test_agent_resume.py: the first process blocks inside step_b until it is killed
("midplan": its planner stops streaming after the first step and never finishes the plan); the
second resumes the task from its checkpoint ("resume-replan": its model is asked for the plan
again). Every tool execution appends a line to SIDE_FILE.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from saber.agent import Agent
from saber.agent.memory import MemoryService
from saber.agent.memory.sqlite_store import SQLiteMemoryStore
from saber.config import Settings
from saber.llm.types import StreamChunk, TextDelta
from saber.rag.embedder import HashingEmbedder
from saber.rag.engine import RagEngine
from saber.rag.store import SQLiteStore
from saber.testing import ScriptedModel
from saber.tools import tool

PLAN = json.dumps([
    {"id": "n1", "tool": "step_a", "params": {}},
    {"id": "n2", "tool": "step_b", "params": {}, "depends_on": ["n1"]},
    {"id": "n3", "tool": "step_c", "params": {"upstream": "${n2}"}, "depends_on": ["n2"]},
])


class StalledPlanner(ScriptedModel):
    """Streams the plan's first step, then nothing more: the process is killed mid-plan."""

    async def stream(self, messages: Any, **kwargs: Any) -> AsyncIterator[StreamChunk]:
        yield TextDelta(content=PLAN[:PLAN.index("\"step_b\"")])  # n1 handed over; n2 is still being written
        await asyncio.Event().wait()


async def main(home: Path, side: Path, task_id: str, phase: str) -> None:
    def note(line: str) -> None:
        with side.open("a", encoding="utf-8") as f:
            f.write(line + "\n")

    @tool
    def step_a() -> str:
        """First step."""
        note("a")
        return "A"

    @tool
    async def step_b() -> str:
        """Second step; in the first process it never finishes."""
        note("b-start")
        if phase == "first":
            await asyncio.Event().wait()
        note("b-done")
        return "B"

    @tool
    def step_c(upstream: str) -> str:
        """Third step, fed by the second."""
        note(f"c({upstream})")
        return "C"

    settings = Settings(home=home, search={"backend": "none"}, graph={"retry_delay": 0})
    embedder = HashingEmbedder()
    replies = {"first": [PLAN], "resume": ["all three steps ran"], "resume-replan": [PLAN, "all three steps ran"]}
    model = StalledPlanner() if phase == "midplan" else ScriptedModel(replies[phase])
    agent = Agent(settings, model=model, builtin=False,
                  tools=[step_a, step_b, step_c], knowledge=RagEngine(SQLiteStore(str(settings.sqlite_path)), embedder),
                  memory=MemoryService(SQLiteMemoryStore(settings.sqlite_path), embedder))
    events = (agent.stream("run a, then b, then c", user_id="u1", task_id=task_id, mode="react")
              if not phase.startswith("resume") else agent.resume(task_id, user_id="u1"))
    async for event in events:
        print(json.dumps(event.to_dict(), ensure_ascii=False, default=str), flush=True)
    await agent.aclose()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]))
