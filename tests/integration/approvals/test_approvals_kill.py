"""A task waiting for approval is killed with -9; the question survives, is answered from the
outside, and the resumed task runs the approved step exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from saber.approvals.store import ApprovalStore
from saber.db import open_database

SCRIPT = Path(__file__).with_name("approval_crash_script.py")
pytestmark = pytest.mark.slow


def start(home: Path, side: Path, phase: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
    return subprocess.Popen([sys.executable, str(SCRIPT), str(home), str(side), "task-w", phase], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_killed_waiting_task_keeps_its_question_and_runs_the_step_once(tmp_path: Path) -> None:
    home, side = tmp_path / "home", tmp_path / "side.txt"
    first = start(home, side, "first")
    assert first.stdout is not None
    for line in first.stdout:
        if json.loads(line)["type"] == "approval_required":
            break
    else:
        raise AssertionError(f"no approval was asked: {first.stderr.read() if first.stderr else ''}")
    os.kill(first.pid, signal.SIGKILL)
    first.wait(timeout=30)
    first.stdout.close()
    if first.stderr:
        first.stderr.close()
    assert not side.exists()

    db = open_database(home / "saber.db")
    store = ApprovalStore(db)
    try:
        pending = store.pending()
        assert [(q.task_id, q.node_id, q.tool) for q in pending] == [("task-w", "n1", "wipe")]
        assert store.decide("task-w", "n1", approve=True, by="cli") is not None
    finally:
        db.close()

    second = start(home, side, "resume")
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    kinds = [e["type"] for e in events]
    assert "approval_required" not in kinds, "the answer given while the task was dead is used"
    given = next(e for e in events if e["type"] == "approval_given")
    assert given["data"]["approved"] is True and given["data"]["by"] == "cli"
    assert events[-1]["type"] == "done" and events[-1]["data"]["answer"] == "wiped after approval"
    assert side.read_text(encoding="utf-8").splitlines() == ["wiped the cache"]
