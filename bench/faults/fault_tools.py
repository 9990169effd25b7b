"""The step tool of the fault test, registered by every ``saber`` process it starts (``tools.modules``).

``witness`` appends a line to ``$SABER_TEST_WITNESS`` when a step starts and when it ends (with
the process id, the time and the step's idempotency key), so the test counts how often each step
of each run really ran, and whether a step that ran twice carried the same key both times.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid

from saber.graph.idempotency import idempotency_key
from saber.tools import tool


def _write(record: dict[str, object]) -> None:
    with open(os.environ["SABER_TEST_WITNESS"], "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


@tool
async def witness(task: str, step: str, seconds: float = 1.0) -> str:
    """Do one step of a test run (it takes ``seconds``) and leave a witness line for it."""
    execution = uuid.uuid4().hex
    key = idempotency_key()
    _write({"e": execution, "task": task, "step": step, "at": "start", "t": time.time(), "pid": os.getpid(), "key": key})
    await asyncio.sleep(seconds)
    _write({"e": execution, "task": task, "step": step, "at": "end", "t": time.time(), "pid": os.getpid(), "key": key})
    return f"{step} done by execution {execution}"
