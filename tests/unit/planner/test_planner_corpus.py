"""The planner corpus: every recorded model output parses to exactly the plan written beside it.

Also reports how many cases a plain ``json.loads`` of the raw text would have read as the same
plan (the baseline the original implementation started from): run with ``-s`` to see it.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from saber.planner import PlanParseError, parse_plan

_LOADER_PATH = Path(__file__).parents[2] / "fixtures" / "planner" / "corpus_loader.py"
_spec = importlib.util.spec_from_file_location("planner_corpus_loader", _LOADER_PATH)
assert _spec is not None and _spec.loader is not None
corpus = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("planner_corpus_loader", corpus)
_spec.loader.exec_module(corpus)

CASES = corpus.load_cases()
TOOLS, AGENTS = corpus.load_tools()


def _outcome(case: Any) -> tuple[bool, str]:
    """(parsed exactly, explanation)."""
    expect = case.expect
    try:
        parsed = parse_plan(case.output, TOOLS, agents=AGENTS)
    except PlanParseError as exc:
        return bool(expect.get("error")), f"PlanParseError: {exc}"
    if expect.get("error"):
        return False, f"expected PlanParseError, got {parsed.format} with {len(parsed.nodes)} node(s)"
    got = corpus.actual_nodes(parsed.nodes)
    want = corpus.expected_nodes(expect)
    if parsed.format != expect["format"]:
        return False, f"format {parsed.format!r} != {expect['format']!r}"
    if got != want:
        return False, f"nodes differ:\n got  {json.dumps(got, ensure_ascii=False)}\n want {json.dumps(want, ensure_ascii=False)}"
    missing = [w for w in expect.get("warnings", []) if not any(w in have for have in parsed.warnings)]
    if missing:
        return False, f"warnings {parsed.warnings} lack {missing}"
    return True, ""


def _baseline(case: Any) -> bool:
    """What ``json.loads`` + taking the list as ideal nodes as-is would have produced."""
    try:
        value = json.loads(case.output)
    except ValueError:
        return bool(case.expect.get("error"))
    if case.expect.get("error"):
        return False
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        return False
    try:
        naive = [{"id": v["id"], "type": v.get("type") or ("sub_agent" if v.get("agent") else "tool"),
                  "tool": v.get("tool") or None, "agent": v.get("agent") or None, "goal": v.get("goal", ""),
                  "params": v.get("params") or {}, "depends_on": v.get("depends_on") or [],
                  "race_group": v.get("race_group") or None} for v in value]
    except (KeyError, TypeError):
        return False
    return naive == corpus.expected_nodes(case.expect)


def test_corpus_is_big_and_varied() -> None:
    assert len(CASES) >= 150
    langs = {c.lang for c in CASES}
    assert langs == {"zh", "en"}
    formats = {c.expect.get("format") for c in CASES}
    for shape in ("ideal", "single_object", "wrapped", "legacy", "function_call", "openai_tool_calls", "hermes",
                  "qwen_xml", "llama_python_tag", "mistral", "deepseek", "doubao", "llmcompiler", "repaired", "pythonic"):
        assert shape in formats, shape
    assert sum(1 for c in CASES if c.expect.get("error")) >= 5


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_corpus_case(case: Any) -> None:
    ok, why = _outcome(case)
    assert ok, f"{case.file} / {case.id}: {why}"


def test_corpus_totals_against_json_loads_baseline(capsys: pytest.CaptureFixture[str]) -> None:
    saber = sum(1 for c in CASES if _outcome(c)[0])
    baseline = sum(1 for c in CASES if _baseline(c))
    with capsys.disabled():
        print(f"\nplanner corpus: {len(CASES)} cases; saber parse_plan exact: {saber}/{len(CASES)}; "
              f"plain json.loads baseline exact: {baseline}/{len(CASES)}")
    assert saber == len(CASES)
    assert baseline < saber
