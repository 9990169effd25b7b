"""The whole ``saber ingest`` command on a small note, as a user runs it: KB/s, start-up included.

    python bench/ingest_cli.py                 # 5 runs of each arm, a 29 KB note
    python bench/ingest_cli.py --runs 9 --kb 12

Each run is a fresh interpreter ingesting a new note (different words each time, so nothing is
"unchanged") into a knowledge base that already exists (opened and migrated once before the
runs), with the default embedder, waiting for its vectors: what ``saber ingest note.md`` costs
from the shell prompt back to it. Two arms alternate run by run so load on a shared machine
hits both alike: "now" (the schema check reads ``saber_schema_version`` and compares it with the
newest migration file's name) and "migration import" (``SABER_DB_ALWAYS_MIGRATE=1``: every start
imports Alembic and asks it, as before the check). Bytecode caching is on, as on a user's
machine. Medians (and minimums) of wall time, with the KB/s they make and the ratio.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
_EN = ("orders", "service", "cluster", "migration", "consumer", "rollback", "budget", "incident", "review", "rota",
       "deploy", "latency", "schema", "backup", "release", "quota", "ticket", "owner", "vendor", "audit")
_ZH = ("订单", "服务", "集群", "迁移", "回滚", "预算", "值班", "发布", "审批", "采购", "负责人", "故障", "复盘", "延迟")


def note(kb: int, seed: int) -> str:
    """A Markdown note of about ``kb`` KB in English and Chinese, different for every seed."""
    rng = random.Random(seed)
    parts = [f"# Team notes {seed}\n"]
    size, section = 0, 0
    while size < kb * 1024:
        section += 1
        en = " ".join(rng.choice(_EN) for _ in range(40)).capitalize() + "."
        zh = "".join(rng.choice(_ZH) for _ in range(30)) + "。"
        text = f"\n## Section {section}\n\n{en} {zh}\n\n- item {rng.randint(1000, 99999)}: {en[:60]}\n"
        parts.append(text)
        size += len(text.encode())
    return "".join(parts)


def run(args: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "saber.cli", *args], env=env, capture_output=True, text=True,
                          timeout=600)
    wall = time.perf_counter() - t0
    if done.returncode != 0 or "1 added" not in done.stdout:
        raise SystemExit(f"ingest failed: {done.stdout[-400:]} {done.stderr[-400:]}")
    return wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--kb", type=int, default=29, help="size of the note (the issue's note: 29 KB)")
    opts = parser.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SABER_") and k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        env.update({"PYTHONPATH": str(SRC), "SABER_HOME": str(home)})
        first = Path(tmp) / "first.md"
        first.write_text(note(2, 0), encoding="utf-8")
        run(["ingest", str(first)], env)  # creates and migrates the knowledge base, writes bytecode
        arms = {"now": {}, "migration import": {"SABER_DB_ALWAYS_MIGRATE": "1"}}
        walls: dict[str, list[float]] = {name: [] for name in arms}
        size = 0
        for i in range(opts.runs):
            for j, (name, extra) in enumerate(arms.items()):
                path = Path(tmp) / f"note-{i}-{j}.md"
                path.write_text(note(opts.kb, 1 + i * len(arms) + j), encoding="utf-8")
                size = path.stat().st_size
                walls[name].append(run(["ingest", str(path)], {**env, **extra}))
    kb = size / 1024
    print(f"saber ingest of a {kb:.1f} KB note (new content each run, default embedder, vectors included), "
          f"{opts.runs} runs per arm, alternating; load average {os.getloadavg()[0]:.1f}")
    for name, values in walls.items():
        med = statistics.median(values)
        print(f"  {name:17s} median {med:.2f} s ({kb / med:.1f} KB/s)  min {min(values):.2f} s "
              f"({kb / min(values):.1f} KB/s)")
    now, before = statistics.median(walls["now"]), statistics.median(walls["migration import"])
    print(f"  migration import / now: {before / now:.2f}x the time")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
