"""Runs (phase "first") or resumes (phase "resume") a react task whose step waits for approval;
prints its events as JSON lines. The kill -9 test in test_approvals_kill.py drives it."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from saber.agent import Agent
from saber.config import Settings
from saber.testing import ScriptedModel
from saber.tools import tool

HOME, SIDE, TASK, PHASE = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]


@tool(requires_approval=True)
def wipe(target: str) -> str:
    """Wipe a target (records each execution).

    Args:
        target: What to wipe.
    """
    with SIDE.open("a", encoding="utf-8") as f:
        f.write(f"wiped {target}\n")
    return f"wiped {target}"


PLAN = json.dumps([{"id": "n1", "type": "tool", "tool": "wipe", "params": {"target": "the cache"}, "depends_on": []}])


async def main() -> None:
    settings = Settings(home=HOME, search={"backend": "none"}, graph={"retry_delay": 0.0})
    replies = [PLAN, "wiped after approval"] if PHASE == "first" else ["wiped after approval"]
    async with Agent(settings, model=ScriptedModel(replies), tools=[wipe]) as agent:
        events = agent.stream("wipe the cache", user_id="u1", mode="react", task_id=TASK) if PHASE == "first" \
            else agent.resume(TASK, user_id="u1")
        async for event in events:
            print(json.dumps(event.to_dict(), ensure_ascii=False, default=str), flush=True)


asyncio.run(main())
