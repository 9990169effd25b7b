"""Custom tools of the cluster test, registered by every ``saber`` process through ``tools.modules``.

``witness`` appends one line per execution to ``$SABER_TEST_WITNESS`` (start and end, with the
process id and times), so the test can count how often each node of each task really ran.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid

from saber.tools import tool


def _write(record: dict[str, object]) -> None:
    with open(os.environ["SABER_TEST_WITNESS"], "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


@tool
async def witness(task: str, user: str, step: str, seconds: float = 0.4) -> str:
    """Do one step of a test task (it takes ``seconds``) and leave a witness line for it."""
    execution = uuid.uuid4().hex
    _write({"e": execution, "task": task, "user": user, "step": step, "at": "start", "t": time.time(), "pid": os.getpid()})
    await asyncio.sleep(seconds)
    _write({"e": execution, "task": task, "user": user, "step": step, "at": "end", "t": time.time(), "pid": os.getpid()})
    return f"{step} done by execution {execution}"


@tool
async def broken_step(task: str) -> str:
    """A step of a test task that always fails (not worth trying again)."""
    raise ValueError(f"step of {task} broken on purpose")
