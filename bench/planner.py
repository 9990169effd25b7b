"""Planner parsing speed: ``parse_plan`` per output over the corpus, beside ``json.loads``.

    python bench/planner.py [--repeat 200]

Prints mean / p50 / p95 per output (µs) for the whole corpus, for the clean ideal-shape
outputs (where ``json.loads`` alone also works), and for a typical three-node plan, with the
ratio parse_plan / json.loads measured side by side in this one run. parse_plan includes
validation (argument coercion, ids, edges), which json.loads does not do.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from saber.planner import PlanParseError, parse_plan

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("planner_corpus_loader", ROOT / "tests/fixtures/planner/corpus_loader.py")
assert _spec is not None and _spec.loader is not None
corpus = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("planner_corpus_loader", corpus)
_spec.loader.exec_module(corpus)

TYPICAL = json.dumps([
    {"id": "n1", "type": "tool", "tool": "rag_search", "goal": "检索个人知识库", "params": {"query": "K8s service 几种类型"},
     "depends_on": [], "race_group": "search"},
    {"id": "n2", "type": "tool", "tool": "search_web", "goal": "网页搜索", "params": {"query": "K8s service 几种类型"},
     "depends_on": [], "race_group": "search"},
    {"id": "n3", "type": "sub_agent", "agent": "writer_agent", "goal": "整理成报告", "params": {},
     "depends_on": ["n1", "n2"], "race_group": None},
], ensure_ascii=False)


def per_call_us(fn: Callable[[], Any], repeat: int) -> float:
    """Mean microseconds of one call, over ``repeat`` calls after a warm-up."""
    for _ in range(5):
        fn()
    start = time.perf_counter_ns()
    for _ in range(repeat):
        fn()
    return (time.perf_counter_ns() - start) / repeat / 1000


def _safe_parse(text: str, tools: Any, agents: Any) -> None:
    try:
        parse_plan(text, tools, agents=agents)
    except PlanParseError:
        pass


def stats(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"mean {statistics.fmean(values):8.1f}  p50 {statistics.median(values):8.1f}  p95 {p95:8.1f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    tools, agents = corpus.load_tools()
    cases = corpus.load_cases()

    all_times = [per_call_us(lambda c=c: _safe_parse(c.output, tools, agents), args.repeat) for c in cases]
    ideal = [c for c in cases if c.expect.get("format") == "ideal" and c.output.strip().startswith("[")
             and _loads_ok(c.output)]
    ideal_saber = [per_call_us(lambda c=c: parse_plan(c.output, tools, agents=agents), args.repeat) for c in ideal]
    ideal_json = [per_call_us(lambda c=c: json.loads(c.output), args.repeat) for c in ideal]
    typical_saber = per_call_us(lambda: parse_plan(TYPICAL, tools, agents=agents), args.repeat * 10)
    typical_json = per_call_us(lambda: json.loads(TYPICAL), args.repeat * 10)

    print(f"planner parsing, µs per output ({args.repeat} repeats per output)")
    print(f"  whole corpus ({len(cases)} outputs), parse_plan : {stats(all_times)}")
    print(f"  ideal outputs ({len(ideal)}),       parse_plan : {stats(ideal_saber)}")
    print(f"  ideal outputs ({len(ideal)}),       json.loads : {stats(ideal_json)}")
    print(f"    ratio parse_plan / json.loads (means)  : {statistics.fmean(ideal_saber) / statistics.fmean(ideal_json):.1f}x")
    print(f"  typical 3-node plan, parse_plan : {typical_saber:8.1f} µs")
    print(f"  typical 3-node plan, json.loads : {typical_json:8.1f} µs")
    print(f"    ratio parse_plan / json.loads          : {typical_saber / typical_json:.1f}x")
    slowest = sorted(zip(all_times, (c.id for c in cases), strict=True), reverse=True)[:3]
    print("  slowest outputs: " + ", ".join(f"{cid} {t:.0f} µs" for t, cid in slowest))


def _loads_ok(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


if __name__ == "__main__":
    main()
