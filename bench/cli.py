"""CLI startup benchmark: ``saber --help`` and a time query, lazy imports vs eager imports, in one run.

    python bench/cli.py              # 7 runs of each, interleaved
    python bench/cli.py --runs 15

"eager" reproduces what the CLI did before: importing the agent (and with it the stores, numpy,
the graph runtime, httpx, ddgs and the openai client) before parsing the command line. "lazy" is the
current ``saber`` command. Each run is a fresh interpreter (a real process, as a user starts it);
the runs alternate so load on a shared machine hits both alike. Medians are printed with the
ratio, and the number of modules each one imported.
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

EAGER_PRELUDE = "import saber.agent, saber.rag.engine, saber.rag.factory, saber.llm.openai_compat\n"

RUNNER = """
import contextlib, io, json, sys, time
t0 = time.perf_counter()
{prelude}from saber.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), contextlib.suppress(SystemExit):
    main({argv!r})
sys.__stderr__.write(json.dumps({{"modules": len(sys.modules)}}) + "\\n")
"""


def one_run(argv: list[str], eager: bool, env: dict[str, str]) -> tuple[float, int]:
    code = RUNNER.format(prelude=EAGER_PRELUDE if eager else "", argv=argv)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"run failed: {done.stderr[-500:]}")
    modules = json.loads(done.stderr.strip().splitlines()[-1])["modules"]
    return wall, modules


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="saber-cli-bench-") as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
        env.update(SABER_HOME=home, SABER_SEARCH_BACKEND="none")
        cases = {"saber --help": ["--help"], "saber ask '东京现在几点' (time query)": ["ask", "东京现在几点"]}
        one_run(cases["saber ask '东京现在几点' (time query)"], False, env)  # creates the data folder once
        print(f"{args.runs} runs each, alternating; wall time of a fresh process, median (min)")
        print(f"{'command':38s} {'eager imports (before)':>26s} {'lazy imports (now)':>22s} {'speed-up':>9s}")
        for label, command in cases.items():
            eager: list[float] = []
            lazy: list[float] = []
            modules = {True: 0, False: 0}
            for _ in range(args.runs):
                for is_eager, bucket in ((True, eager), (False, lazy)):
                    wall, count = one_run(command, is_eager, env)
                    bucket.append(wall)
                    modules[is_eager] = count
            e, lz = statistics.median(eager), statistics.median(lazy)
            print(f"{label:38s} {e * 1000:9.0f} ms ({min(eager) * 1000:5.0f}) {modules[True]:4d} mod "
                  f"{lz * 1000:7.0f} ms ({min(lazy) * 1000:5.0f}) {modules[False]:4d} mod {e / lz:8.1f}x", flush=True)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"(load average during the run: {load:.1f} on {os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
