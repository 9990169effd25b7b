"""bench/against_react.py runs end to end on a few tasks and prints its report (so it cannot rot).

Performance is not asserted here: the bench's figures are measured by running it in full."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_bench_runs_three_tasks_and_reports() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
    env["PYTHONPATH"] = str(ROOT / "src")
    done = subprocess.run(
        [sys.executable, "bench/against_react.py", "--tasks", "3", "--token-ms", "1", "--ttft-ms", "5",
         "--latency-scale", "0.1"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    report = done.stdout
    assert report.startswith("3 tasks (")
    for section in ("the oracle model: 3 tasks", "ratios Saber / ReAct", "model calls by purpose",
                    "exact calls by kind of task", "the mistaken oracle"):
        assert section in report
    rows = [line.split() for line in report.splitlines() if line.startswith("  ")]
    for system in ("saber-stream", "saber-whole", "react"):
        row = next(r for r in rows if r[0] == system)
        assert row[1].endswith("/3"), row
    assert "Traceback" not in done.stderr
