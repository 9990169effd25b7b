"""``saber approvals``, ``saber approve`` and ``saber deny`` as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from saber.approvals.store import ApprovalStore
from saber.db import open_database

pytestmark = pytest.mark.slow


def saber(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
    env["SABER_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "saber.cli", *args], env=env, capture_output=True, text=True, timeout=120)


def test_list_approve_by_prefix_and_deny(tmp_path: Path) -> None:
    home = tmp_path / "home"
    db = open_database(home / "saber.db")
    store = ApprovalStore(db)
    for node in ("n1", "n2"):
        store.ask(task_id="a1b2c3d4e5", node_id=node, user_id="cli", tool="exec_command",
                  params={"command": "rm -rf build"}, reason="rm is not on the allow-list")
    listed = saber(home, "approvals", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [q["node_id"] for q in json.loads(listed.stdout)] == ["n1", "n2"]
    approved = saber(home, "approve", "a1b2", "n1")
    assert approved.returncode == 0, approved.stderr
    assert approved.stdout.strip() == "approved step n1 of task a1b2c3d4e5"
    denied = saber(home, "deny", "a1b2c3d4e5", "n2", "--reason", "not [red]now[/red]")
    assert denied.returncode == 0, denied.stderr
    again = saber(home, "approve", "a1b2c3d4e5", "n2")
    assert again.returncode == 1 and again.stderr.strip() == "saber: error: step n2 of task a1b2c3d4e5 was already denied"
    unknown = saber(home, "approve", "zzz", "n9")
    assert unknown.returncode == 2 and "no question for step n9" in unknown.stderr
    q1, q2 = store.get("a1b2c3d4e5", "n1"), store.get("a1b2c3d4e5", "n2")
    assert q1 is not None and q1.status == "approved" and q1.decided_by == "cli"
    assert q2 is not None and q2.status == "denied" and q2.decision_reason == "not [red]now[/red]"
    assert saber(home, "approvals").stdout.strip() == "no step is waiting for approval"
    db.close()
