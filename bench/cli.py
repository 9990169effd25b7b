"""CLI startup benchmark: ``saber --help`` and a time query, this checkout against an earlier revision, in one run.

    python bench/cli.py                      # 7 runs of each, against the default earlier revision
    python bench/cli.py --runs 15 --before 91bf376
    python bench/cli.py --runs 9 --before main --query 现在几点   # another time query

"before" is the source tree of ``--before`` (default ``91bf376``: main before the agent loaded
lazily, when a time query imported SQLAlchemy for SQLite, numpy, httpx, the planner's parsers and
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
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from source_trees import DEFAULT_BEFORE, REPO, extract_src

RUNNER = """
import contextlib, io, json, sys
from saber.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), contextlib.suppress(SystemExit):
    main({argv!r})
sys.__stderr__.write(json.dumps({{"modules": len(sys.modules)}}) + "\\n")
"""

TIME_QUERY = "东京现在几点"


def cases(query: str = TIME_QUERY) -> dict[str, list[str]]:
    return {"saber --help": ["--help"], f"saber ask '{query}' (time query)": ["ask", query]}


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def one_run(argv: list[str], src: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """Wall time, CPU time (user + system: less disturbed by other work on a shared machine) and modules."""
    t0, cpu0 = time.perf_counter(), _cpu()
    done = subprocess.run([sys.executable, "-c", RUNNER.format(argv=argv)], env={**env, "PYTHONPATH": str(src)},
                          capture_output=True, text=True, timeout=300)
    wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
    if done.returncode != 0:
        raise SystemExit(f"run failed ({src}): {done.stderr[-500:]}")
    return wall, cpu, json.loads(done.stderr.strip().splitlines()[-1])["modules"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--before", default=DEFAULT_BEFORE, help="the earlier revision to compare with")
    ap.add_argument("--query", default=TIME_QUERY, help="the time query to run")
    args = ap.parse_args(argv)
    commands = cases(args.query)
    with tempfile.TemporaryDirectory(prefix="saber-cli-bench-") as tmp:
        trees = {"before": extract_src(args.before, Path(tmp)), "now": REPO / "src"}
        env = {k: v for k, v in os.environ.items() if not k.startswith("SABER_") and k != "PYTHONDONTWRITEBYTECODE"}
        env.update(SABER_HOME=str(Path(tmp) / "home"), SABER_SEARCH_BACKEND="none")
        for src in trees.values():  # creates the data folder and migrates it; writes each tree's bytecode
            for command in commands.values():
                one_run(command, src, env)
        print(f"{args.runs} runs each, alternating; a fresh process each: median wall time (min) / median CPU time")
        print(f"{'command':38s} {'before (' + args.before + ')':>34s} {'now':>34s} {'speed-up wall/CPU':>18s}")
        medians: dict[str, tuple[float, float]] = {}
        for label, command in commands.items():
            runs: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
            modules: dict[str, int] = {}
            for _ in range(args.runs):
                for name, src in trees.items():
                    wall, cpu, modules[name] = one_run(command, src, env)
                    runs[name].append((wall, cpu))
            cells = {}
            for name in trees:
                walls, cpus = [w for w, _ in runs[name]], [c for _, c in runs[name]]
                medians[f"{name} {label}"] = (statistics.median(walls), statistics.median(cpus))
                cells[name] = (f"{statistics.median(walls) * 1000:6.0f} ms ({min(walls) * 1000:5.0f}) / "
                               f"{statistics.median(cpus) * 1000:5.0f} ms {modules[name]:4d} mod")
            (bw, bc), (nw, nc) = medians[f"before {label}"], medians[f"now {label}"]
            print(f"{label:38s} {cells['before']:>34s} {cells['now']:>34s} {bw / nw:8.1f}x/{bc / nc:.1f}x", flush=True)
    (help_wall, help_cpu), (ask_wall, ask_cpu) = (medians[f"now {label}"] for label in commands)
    print(f"now: the time query takes {ask_wall / help_wall:.1f}x (CPU {ask_cpu / help_cpu:.1f}x) "
          "as long as `saber --help`")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"(load average at the end: {load:.1f} on {os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
