"""CLI startup benchmark: ``saber --help`` and a time query, this checkout against an earlier revision, in one run.

    python bench/cli.py                      # 7 runs of each, against the default earlier revision
    python bench/cli.py --runs 15 --before 91bf376

"before" is the source tree of ``--before`` (default ``91bf376``: main before the agent loaded
lazily, when a time query imported the stores' SQLAlchemy, numpy, httpx, the planner's parsers and
every mode), extracted with ``git archive`` and run with the same interpreter and packages; "now"
is this checkout's ``src``. Each run is a fresh interpreter (a real process, as a user starts it),
with bytecode caching on as on a user's machine (``PYTHONDONTWRITEBYTECODE`` is dropped: with it,
every module would be compiled from source on every run). The runs alternate so load on a shared
machine hits both alike. Medians (and minimums) are printed with the ratio, and the modules each
imported. The time query is also given as a multiple of ``saber --help`` in the same run, which
carries from one machine to another better than milliseconds do.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_BEFORE = "91bf376"

RUNNER = """
import contextlib, io, json, sys
from saber.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), contextlib.suppress(SystemExit):
    main({argv!r})
sys.__stderr__.write(json.dumps({{"modules": len(sys.modules)}}) + "\\n")
"""

CASES = {"saber --help": ["--help"], "saber ask '东京现在几点' (time query)": ["ask", "东京现在几点"]}


def one_run(argv: list[str], src: Path, env: dict[str, str]) -> tuple[float, int]:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", RUNNER.format(argv=argv)], env={**env, "PYTHONPATH": str(src)},
                          capture_output=True, text=True, timeout=300)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"run failed ({src}): {done.stderr[-500:]}")
    return wall, json.loads(done.stderr.strip().splitlines()[-1])["modules"]


def extract(revision: str, into: Path) -> Path:
    """``src`` of ``revision`` under ``into`` (``git archive``: the checkout is not touched)."""
    archive = into / "before.tar"
    with archive.open("wb") as out:
        done = subprocess.run(["git", "-C", str(REPO), "archive", revision, "src"], stdout=out, stderr=subprocess.PIPE)
    if done.returncode != 0:
        raise SystemExit(f"cannot read revision {revision!r}: {done.stderr.decode().strip()}")
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--before", default=DEFAULT_BEFORE, help="the earlier revision to compare with")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="saber-cli-bench-") as tmp:
        trees = {"before": extract(args.before, Path(tmp)), "now": REPO / "src"}
        env = {k: v for k, v in os.environ.items() if not k.startswith("SABER_") and k != "PYTHONDONTWRITEBYTECODE"}
        env.update(SABER_HOME=str(Path(tmp) / "home"), SABER_SEARCH_BACKEND="none")
        for src in trees.values():  # creates the data folder and migrates it; writes each tree's bytecode
            for command in CASES.values():
                one_run(command, src, env)
        print(f"{args.runs} runs each, alternating; wall time of a fresh process, median (min)")
        print(f"{'command':38s} {'before (' + args.before + ')':>28s} {'now':>24s} {'speed-up':>9s}")
        medians: dict[str, float] = {}
        for label, command in CASES.items():
            walls: dict[str, list[float]] = {name: [] for name in trees}
            modules: dict[str, int] = {}
            for _ in range(args.runs):
                for name, src in trees.items():
                    wall, modules[name] = one_run(command, src, env)
                    walls[name].append(wall)
            b, n = (statistics.median(walls[name]) for name in ("before", "now"))
            medians[label] = n
            print(f"{label:38s} {b * 1000:9.0f} ms ({min(walls['before']) * 1000:5.0f}) {modules['before']:4d} mod "
                  f"{n * 1000:7.0f} ms ({min(walls['now']) * 1000:5.0f}) {modules['now']:4d} mod {b / n:8.1f}x",
                  flush=True)
    help_now, ask_now = medians.values()
    print(f"now: the time query takes {ask_now / help_now:.1f}x as long as `saber --help`")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"(load average at the end: {load:.1f} on {os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
