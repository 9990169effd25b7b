"""The fault test of bench/faults/faults.py, run as a test: a private PostgreSQL and Redis, one API
node and two workers, 16 runs; Redis killed and restarted empty, PostgreSQL restarted, Redis frozen
for 10 s, a worker killed with kill -9, the API node restarted. Every run ends done, within a
minute of the last fault; no step runs to its end twice; no process exits on its own."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.timeout(360)]

BENCH = Path(__file__).parents[3] / "bench" / "faults" / "faults.py"


def _load():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("saber_bench_faults", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_runs_survive_redis_postgresql_worker_and_api_faults(tmp_path: Path) -> None:
    faults = _load()
    report = faults.run_faults(tmp_path / "faults", runs=16, log=lambda line: print(line, flush=True))
    print("\n".join(report.lines()))
    assert all(n > 0 for n in report.in_flight), f"every fault hit runs under way: {report.lines()}"
    assert report.done == 16, report.statuses
    assert report.steps_ran_twice == 0 and report.restarted_with_other_key == 0, report.lines()
    assert not report.exited, report.exited
    assert report.seconds_to_last_done is not None and report.seconds_to_last_done <= faults.SETTLE_SECONDS
    assert report.followers_saw_done == 16 and report.events_repeated == 0, report.lines()
    assert max(report.claims.values()) <= 3, f"no run spins through the queue: {report.claims}"
