"""kill -9 at seeded points of a checkpointed run, then resume, until it finishes (issue 9):
a node the checkpoint has as done never starts again, and every node's side effect, guarded by
its idempotency key, happens exactly once, however often the node itself was started."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from saber.graph import NodeStatus, SQLiteCheckpointStore

SCRIPT = Path(__file__).with_name("kill_run.py")
KILLS = 4


def _start(mode: str, db: Path, side: Path, seed: int) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
    return subprocess.Popen([sys.executable, str(SCRIPT), mode, str(db), "task-k", str(side), str(seed)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _lines(side: Path) -> list[str]:
    return side.read_text(encoding="utf-8").splitlines() if side.exists() else []


async def _done_nodes(db: Path) -> set[str]:
    store = SQLiteCheckpointStore(db)
    try:
        saved = await store.load("task-k")
        return {n.id for n in saved.nodes if n.status is NodeStatus.DONE} if saved else set()
    finally:
        await store.close()


def _starts(lines: list[str]) -> set[str]:
    return {line.rsplit(":", 1)[-1] for line in lines if line.startswith("start ")}


@pytest.mark.slow
def test_kill_9_and_resume_never_repeats_a_finished_node_or_an_effect(tmp_path: Path, chaos_seed: int) -> None:
    rng = random.Random(chaos_seed)
    db, side = tmp_path / "cp.db", tmp_path / "side.txt"
    finished_before: set[str] = set()
    for attempt in range(KILLS + 1):
        seen = len(_lines(side))
        proc = _start("run" if attempt == 0 else "resume", db, side, chaos_seed)
        if attempt < KILLS:
            target = seen + rng.randrange(1, 8)
            while proc.poll() is None and len(_lines(side)) < target:
                time.sleep(0.002)  # waiting for the subprocess to reach the kill point, not a timing assertion
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode in (0, -signal.SIGKILL), f"seed {chaos_seed}: {err}"
        again = _starts(_lines(side)[seen:]) & finished_before
        assert not again, f"seed {chaos_seed}: nodes the checkpoint had as done ran again: {again}"
        finished_before = asyncio.run(_done_nodes(db)) if db.exists() else set()
        if proc.returncode == 0:
            break
    effects = Counter(line.split(" ", 1)[1] for line in _lines(side) if line.startswith("effect "))
    assert set(effects) == {f"task-k:n{i}" for i in range(1, 13)}, f"seed {chaos_seed}: {effects}"
    assert all(count == 1 for count in effects.values()), f"seed {chaos_seed}: an effect repeated: {effects}"
    assert finished_before == {f"n{i}" for i in range(1, 13)}
