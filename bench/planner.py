"""Planner parsing: exact-match per output shape on calls written by others, then speed.

    pip install --no-deps bfcl-eval==2026.3.23   # once: its wheel ships the BFCL data files
    python bench/planner.py [--repeat 200] [--bfcl-data DIR] [--skip-speed]

Accuracy: the Berkeley Function Calling Leaderboard's ground-truth calls (``planner_bfcl.py``
says which and how) rendered into each output shape, parsed by ``parse_plan`` with that case's
function docs, beside two baselines run on the same texts in this run: ``json.loads`` and
``ast.literal_eval`` of the whole output, reading the calls out of the common JSON layouts.

Speed: mean / p50 / p95 per output (µs) for the whole planner corpus, for its clean ideal-shape
outputs (where ``json.loads`` alone also works), and for a typical three-node plan, with the
ratio parse_plan / json.loads measured side by side in this one run. parse_plan includes
validation (argument coercion, ids, edges), which json.loads does not do.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import saber.planner.parse as plan_parse
from saber.planner import PlanParseError, parse_plan

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("planner_corpus_loader", ROOT / "tests/fixtures/planner/corpus_loader.py")
assert _spec is not None and _spec.loader is not None
corpus = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("planner_corpus_loader", corpus)
_spec.loader.exec_module(corpus)
_bfcl_spec = importlib.util.spec_from_file_location("planner_bfcl", ROOT / "bench/planner_bfcl.py")
assert _bfcl_spec is not None and _bfcl_spec.loader is not None
bfcl = importlib.util.module_from_spec(_bfcl_spec)
sys.modules.setdefault("planner_bfcl", bfcl)
_bfcl_spec.loader.exec_module(bfcl)

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


def accuracy(data: Path) -> None:
    cases, skipped = bfcl.load_cases(data)
    fitting = {c.id for c in cases if bfcl.fits_its_schema(c)}
    print(f"exact calls recovered, per output shape: {len(cases)} BFCL v4 cases ({data}), "
          f"{len(fitting)} whose ground truth fits its own function doc; {skipped} skipped")
    print(f"  {'shape':40s} {'cases':>6s} {'parse_plan':>11s} {'(fitting)':>10s} {'no pythonic.py':>15s} "
          f"{'json.loads':>11s} {'literal_eval':>13s}")
    print(f"  {'':40s} {'':6s} {'':11s} {'':10s} {'':15s} {'(no validation, all cases)':>25s}")
    for shape, render in bfcl.SHAPES.items():
        texts = [(c, t) for c in cases if (t := render(c)) is not None]
        saber = fit = plain = literal = before = 0
        for case, text in texts:
            got = _parsed(text, case)
            if bfcl.same_calls(got, case):
                saber += 1
                fit += case.id in fitting
            with _without_pythonic():
                before += bfcl.same_calls(_parsed(text, case), case)
            plain += _baseline_ok(bfcl.baseline_json(text), case)
            literal += _baseline_ok(bfcl.baseline_literal_eval(text), case)
        n = len(texts)
        n_fit = sum(1 for c, _ in texts if c.id in fitting)
        print(f"  {shape:40s} {n:6d} {saber / n:10.1%} {fit / max(1, n_fit):10.1%} {before / n:14.1%} "
              f"{plain / n:10.1%} {literal / n:12.1%}")
    print("  (a pythonic shape is rendered only where every name and keyword is a Python identifier;")
    print("   'no pythonic.py' is parse_plan with planner/pythonic.py switched off: the text dialects of")
    print("   llm/text_tool_calls.py still read keyword-only calls after <|python_tag|> and <|python_start|>)")


def _parsed(text: str, case: Any) -> list[tuple[str, dict[str, Any]]]:
    try:
        return [(n.tool or "", dict(n.params)) for n in parse_plan(text, case.tools).nodes]
    except PlanParseError:
        return []


@contextlib.contextmanager
def _without_pythonic() -> Iterator[None]:
    """parse_plan as it was before ``planner/pythonic.py`` (the other tiers unchanged)."""
    saved = plan_parse.parse_pythonic
    plan_parse.parse_pythonic = lambda *args, **kwargs: None
    try:
        yield
    finally:
        plan_parse.parse_pythonic = saved


def _baseline_ok(calls: list[Any] | None, case: Any) -> bool:
    """A baseline's calls, taken as they are (no validation), against the ground truth."""
    return calls is not None and [(n, a) for n, a in calls] == case.calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--bfcl-data", help="the BFCL data folder (default: the installed bfcl-eval wheel's)")
    parser.add_argument("--skip-speed", action="store_true")
    args = parser.parse_args()
    data = bfcl.data_dir(args.bfcl_data)
    if data is None:
        print("no BFCL data: `pip install --no-deps bfcl-eval==2026.3.23` (or pass --bfcl-data); accuracy skipped")
    else:
        accuracy(data)
    if args.skip_speed:
        return
    print()
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
