"""A react task survives its process: kill -9 mid-graph, resume in a new process, each step once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from saber.agent import Agent
from saber.testing import ScriptedModel
from saber.tools import tool

SCRIPT = Path(__file__).with_name("agent_crash_script.py")


def start(home: Path, side: Path, phase: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
    return subprocess.Popen([sys.executable, str(SCRIPT), str(home), str(side), "task-1", phase], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def kill_when(proc: subprocess.Popen[str], seen: Callable[[dict[str, Any]], bool]) -> None:
    """Read ``proc``'s events until ``seen`` says so, then kill -9 it."""
    assert proc.stdout is not None
    for line in proc.stdout:
        if seen(json.loads(line)):
            break
    else:
        raise AssertionError(f"the awaited event never came: {proc.stderr.read() if proc.stderr else ''}")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    if proc.stderr:
        proc.stderr.close()


def resumed(home: Path, side: Path, phase: str) -> list[dict[str, Any]]:
    """The events of a new process that resumes the task (it must end cleanly)."""
    second = start(home, side, phase)
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    return [json.loads(line) for line in out.splitlines()]


@pytest.mark.slow
def test_killed_react_task_resumes_without_rerunning_finished_steps(tmp_path: Path) -> None:
    home, side = tmp_path / "home", tmp_path / "side.txt"
    kill_when(start(home, side, "first"), lambda e: e["type"] == "node_start" and e["data"]["tool"] == "step_b")

    events = resumed(home, side, "resume")
    assert events[0]["type"] == "start" and events[0]["data"]["query"] == "run a, then b, then c"
    assert events[1]["data"]["rule"] == "resume:checkpoint(running)"
    ran = [e["data"]["tool"] for e in events if e["type"] == "node_start"]
    assert ran == ["step_b", "step_c"], "the finished step is not run again"
    assert events[-1]["type"] == "done" and events[-1]["data"]["answer"] == "all three steps ran"
    assert side.read_text(encoding="utf-8").splitlines() == ["a", "b-start", "b-start", "b-done", "c(B)"]


@pytest.mark.slow
def test_a_task_killed_while_its_plan_streamed_is_planned_again_and_keeps_its_finished_step(tmp_path: Path) -> None:
    home, side = tmp_path / "home", tmp_path / "side.txt"
    # the first step is done (and saved: events follow the checkpoint write)
    kill_when(start(home, side, "midplan"), lambda e: e["type"] == "node_done" and e["data"]["id"] == "n1")

    events = resumed(home, side, "resume-replan")
    plan = next(e["data"] for e in events if e["type"] == "plan")
    assert [n["id"] for n in plan["nodes"]] == ["n1", "n2", "n3"]
    assert any("planned again; 1 step(s) kept, 2 added" in w for w in plan["warnings"])
    assert [e["data"]["tool"] for e in events if e["type"] == "node_start"] == ["step_b", "step_c"]
    assert events[-1]["type"] == "done" and events[-1]["data"]["answer"] == "all three steps ran"
    assert side.read_text(encoding="utf-8").splitlines() == ["a", "b-start", "b-done", "c(B)"]


@tool
def quick() -> str:
    """A step that finishes at once."""
    return "ok"


async def test_resume_refuses_finished_unknown_and_other_users_tasks(make_agent: Callable[..., Agent]) -> None:
    agent = make_agent(ScriptedModel(['[{"id": "n1", "tool": "quick"}]', "done"]), builtin=False, tools=[quick])
    await agent.ask("run quick", user_id="u1", mode="react", task_id="t-done")
    assert [t["task_id"] for t in await agent.tasks(unfinished=False)] == ["t-done"]
    assert await agent.tasks() == []
    for task_id, user, message in (("t-done", None, r"already finished \(done\)"), ("nope", None, "no resumable task"),
                                   ("t-done", "u2", "belongs to another user")):
        with pytest.raises(ValueError, match=message):
            async for _ in agent.resume(task_id, user_id=user):
                pass
