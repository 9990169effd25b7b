"""Opening the SQLite database (already at the newest revision) and running one SELECT, in fresh
processes: this checkout's ``saber.db`` against an earlier revision's (by default the one before
SQLite ran on sqlite3).

    python bench/db_open.py                  # 9 runs of each, alternating
    python bench/db_open.py --before 91bf376 --runs 15

This checkout runs twice: as a server or a worker opens it ("after, pooled": the SQLAlchemy
engine and its pool) and as a one-shot CLI command does ("after, one-shot", inside
``saber.db.one_shot()``: no pool, no SQLAlchemy). Prints, for each, the median time of the
open + SELECT inside the process, the median wall time of the whole process, and whether
SQLAlchemy was imported.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from source_trees import DEFAULT_BEFORE, REPO, extract_src

RUNNER = """
import json, sys, time
t0 = time.perf_counter()
from saber.db import open_database
if sys.argv[2] == "one-shot":
    from saber.db import one_shot
    with one_shot():
        db = open_database(sys.argv[1])
else:
    db = open_database(sys.argv[1])
with db.transaction() as tx:
    tx.execute("SELECT COUNT(*) FROM mem_history").fetchone()
db.close()
print(json.dumps({"open": time.perf_counter() - t0, "sqlalchemy": "sqlalchemy" in sys.modules}))
"""


def one_run(src: str, path: str, mode: str = "pooled") -> tuple[float, float, bool]:
    env = {**os.environ, "PYTHONPATH": src}
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", RUNNER, path, mode], env=env, capture_output=True, text=True,
                          check=True, timeout=120)
    wall = time.perf_counter() - t0
    result = json.loads(done.stdout)
    return result["open"], wall, result["sqlalchemy"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=DEFAULT_BEFORE, help="the earlier revision to compare with")
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        before, after = str(extract_src(args.before, Path(home))), str(REPO / "src")
        arms = {"before": (before, "pooled"), "after, pooled": (after, "pooled"), "after, one-shot": (after, "one-shot")}
        path = str(Path(home) / "saber.db")
        one_run(after, path)  # migrated once, outside the timings
        times: dict[str, list[tuple[float, float, bool]]] = {name: [] for name in arms}
        for _ in range(args.runs):
            for name, (src, mode) in arms.items():  # alternating: load on a shared machine hits all alike
                times[name].append(one_run(src, path, mode))
    for name, runs in times.items():
        opened = statistics.median(r[0] for r in runs) * 1000
        wall = statistics.median(r[1] for r in runs) * 1000
        print(f"{name:>15}: open + SELECT {opened:6.1f} ms, process {wall:6.1f} ms, "
              f"sqlalchemy imported: {runs[0][2]}  (median of {len(runs)})")


if __name__ == "__main__":
    main()
