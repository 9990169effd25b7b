"""The whole ``saber ingest`` command on a small note, as a user runs it: KB/s, start-up included.

    python bench/ingest_cli.py                 # 5 runs of each arm, a 29 KB note
    python bench/ingest_cli.py --runs 9 --kb 12 --before 3452f6b

Each run is a fresh interpreter ingesting a new note (different words each time, so nothing is
"unchanged") into a knowledge base that already exists (opened and migrated once before the
runs), with the default embedder, waiting for its vectors: what ``saber ingest note.md`` costs
from the shell prompt back to it. Three arms alternate run by run so load on a shared machine
hits them alike: "now" (the schema check reads ``saber_schema_version`` and compares it with the
newest migration file's name; jieba without pkg_resources; the USE tokenizer from the
sentencepiece library), "now + migration import" (``SABER_DB_ALWAYS_MIGRATE=1``: every start
imports Alembic and asks it, as when the issue was filed) and "before" (the source tree of
``--before``, default 3452f6b: this branch's base, with the cheap schema check already in but
pkg_resources and the pure-Python tokenizer). Bytecode caching is on, as on a user's machine.
Medians of wall time (the KB/s they make) and of CPU time (user + system of the process: what
other work on a shared machine disturbs least), with the ratios.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from source_trees import extract_src

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


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def run(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one ``saber`` process."""
    t0, cpu0 = time.perf_counter(), _cpu()
    done = subprocess.run([sys.executable, "-m", "saber.cli", *args], env=env, capture_output=True, text=True,
                          timeout=600)
    wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
    if done.returncode != 0 or "1 added" not in done.stdout:
        raise SystemExit(f"ingest failed: {done.stdout[-400:]} {done.stderr[-400:]}")
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--kb", type=int, default=29, help="size of the note (the issue's note: 29 KB)")
    parser.add_argument("--before", default="3452f6b", help="the earlier revision to compare with")
    opts = parser.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SABER_") and k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "before").mkdir()
        before_src = extract_src(opts.before, Path(tmp) / "before")
        arms = {"now": {"PYTHONPATH": str(SRC)},
                "now + migration import": {"PYTHONPATH": str(SRC), "SABER_DB_ALWAYS_MIGRATE": "1"},
                f"before ({opts.before})": {"PYTHONPATH": str(before_src)}}
        homes = {name: Path(tmp) / f"home-{k}" for k, name in enumerate(arms)}
        for name, extra in arms.items():  # creates and migrates each knowledge base, writes bytecode
            first = Path(tmp) / f"first-{name[:3]}.md"
            first.write_text(note(2, hash(name) % 1000), encoding="utf-8")
            run(["ingest", str(first)], {**env, **extra, "SABER_HOME": str(homes[name])})
        walls: dict[str, list[float]] = {name: [] for name in arms}
        cpus: dict[str, list[float]] = {name: [] for name in arms}
        size = 0
        for i in range(opts.runs):
            for j, (name, extra) in enumerate(arms.items()):
                path = Path(tmp) / f"note-{i}-{j}.md"
                path.write_text(note(opts.kb, 1000 + i * len(arms) + j), encoding="utf-8")
                size = path.stat().st_size
                wall, cpu = run(["ingest", str(path)], {**env, **extra, "SABER_HOME": str(homes[name])})
                walls[name].append(wall)
                cpus[name].append(cpu)
    kb = size / 1024
    print(f"saber ingest of a {kb:.1f} KB note (new content each run, default embedder, vectors included), "
          f"{opts.runs} runs per arm, alternating; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    now_wall, now_cpu = statistics.median(walls["now"]), statistics.median(cpus["now"])
    for name in arms:
        wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
        print(f"  {name:24s} wall median {wall:5.2f} s ({kb / wall:5.1f} KB/s, {wall / now_wall:.2f}x now)   "
              f"CPU median {cpu:5.2f} s ({kb / cpu:5.1f} KB per CPU-second, {cpu / now_cpu:.2f}x now)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
