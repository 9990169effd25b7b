"""The planner benchmark's reading of BFCL data: what it calls the ground truth and an exact match."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from saber.planner import parse_plan

_PATH = Path(__file__).parents[3] / "bench" / "planner_bfcl.py"
_spec = importlib.util.spec_from_file_location("planner_bfcl", _PATH)
assert _spec is not None and _spec.loader is not None
bfcl = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("planner_bfcl", bfcl)
_spec.loader.exec_module(bfcl)

FUNCTION = {"name": "hotel.search", "description": "Find hotels.", "parameters": {
    "type": "dict", "required": ["location"], "properties": {
        "location": {"type": "string"}, "rooms": {"type": "integer", "default": 1},
        "price": {"type": "float"}, "filters": {"type": "dict", "properties": {"pool": {"type": "boolean", "default": False}}}}}}


def _write(folder: Path, category: str, rows: list[dict[str, Any]], answers: list[dict[str, Any]]) -> None:
    (folder / "possible_answer").mkdir(parents=True, exist_ok=True)
    (folder / f"BFCL_v4_{category}.json").write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    (folder / "possible_answer" / f"BFCL_v4_{category}.json").write_text("\n".join(json.dumps(a) for a in answers), encoding="utf-8")


@pytest.fixture
def data(tmp_path: Path) -> Path:
    for category in bfcl.CATEGORIES:
        _write(tmp_path, category, [], [])
    _write(tmp_path, "simple_python", [{"id": "s0", "question": [], "function": [FUNCTION]}],
           [{"id": "s0", "ground_truth": [{"hotel.search": {"location": ["Paris", "Paris, France"], "rooms": ["", 1],
                                                             "price": [99.5], "filters": [{"pool": [True]}]}}]}])
    return tmp_path


def test_first_possible_answer_is_the_truth_and_empty_means_left_out(data: Path) -> None:
    cases, skipped = bfcl.load_cases(data)
    assert skipped == 0 and len(cases) == 1
    assert cases[0].calls == [("hotel.search", {"location": "Paris", "price": 99.5, "filters": {"pool": True}})]
    assert cases[0].tools["hotel.search"].schema["properties"]["price"]["type"] == "number"  # BFCL's "float"


def test_every_shape_renders_text_the_planner_reads_back_exactly(data: Path) -> None:
    (case,), _ = bfcl.load_cases(data)
    for shape, render in bfcl.SHAPES.items():
        text = render(case)
        got = [(n.tool, n.params) for n in parse_plan(text, case.tools).nodes]
        assert bfcl.same_calls(got, case), (shape, text, got)


def test_exact_match_allows_only_schema_defaults_beyond_the_truth(data: Path) -> None:
    (case,), _ = bfcl.load_cases(data)
    truth = {"location": "Paris", "price": 99.5, "filters": {"pool": True}}
    assert bfcl.same_calls([("hotel.search", {**truth, "rooms": 1})], case)
    assert not bfcl.same_calls([("hotel.search", {**truth, "rooms": 2})], case)
    assert not bfcl.same_calls([("hotel.search", {**truth, "price": 99})], case)
    assert not bfcl.same_calls([("hotel.search", truth), ("hotel.search", truth)], case)


def test_baselines_read_only_bare_json_or_literals(data: Path) -> None:
    (case,), _ = bfcl.load_cases(data)
    ideal = bfcl.SHAPES["ideal JSON plan"](case)
    pythonic = bfcl.SHAPES["pythonic list (Llama 3.2/3.3)"](case)
    assert bfcl.baseline_json(ideal) == case.calls
    assert bfcl.baseline_json(pythonic) is None
    assert bfcl.baseline_literal_eval(pythonic) is None
