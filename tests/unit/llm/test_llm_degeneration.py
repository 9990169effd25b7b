"""Spotting a repetition loop in a stream's text (shaped like what SmolLM2-135M produced)."""

from __future__ import annotations

import json

import pytest

from saber.llm.degeneration import looks_structured, repetition


@pytest.mark.parametrize("text", [
    "你好！" * 40,
    "Hello! How can I help you today? " * 6,
    "".join(f"Step {i}: check the weather in Paris.\n" for i in range(1, 12)),
    "The answer is: " + "the weather in Shanghai is sunny and the weather in Shanghai is sunny and " * 4,
    "Sure.\n" + "\n".join(["- get_weather(city=\"Shanghai\")"] * 7) + "\n",
    "!" * 80,
    "| 2020 | 455 |\n" * 8,  # the same row, digits and all
    "".join(f"Day {i}: sunny, 21°C in Paris.\n" for i in range(1, 10)),
])
def test_loops_are_found(text: str) -> None:
    assert repetition(text) is not None


@pytest.mark.parametrize("text", [
    "",
    "Tokyo: 12:00 (Asia/Tokyo). Paris: sunny, 21°C, light wind from the west.",
    "北京现在是中午 12 点，天气晴，气温 21°C，东北风 2 级，空气质量良好，适合外出。",
    "1. ClusterIP — reachable inside the cluster.\n2. NodePort — a port on every node.\n3. LoadBalancer — a cloud balancer.\n",
    "| city | time |\n|---|---|\n| Tokyo | 12:00 |\n| Paris | 05:00 |\n",
    "| year | revenue |\n|---|---|\n" + "".join(f"| {y} | {v} |\n" for y, v in zip(range(2010, 2024), range(312, 999, 37), strict=False)),
    "Hosts: " + ", ".join(f"192.168.{i}.{j}" for i in range(1, 4) for j in range(1, 10)),
    "".join(f"{i}. {n}\n" for i, n in enumerate(range(1000, 1600, 17), start=1)),
])
def test_ordinary_text_is_not_a_loop(text: str) -> None:
    assert repetition(text) is None


def _plan(n: int, *, indent: int | None = None) -> str:
    nodes = [{"id": f"n{i}", "type": "tool", "tool": "fetch_page", "params": {"report": "annual report", "i": i},
              "depends_on": [], "race_group": None} for i in range(1, n + 1)]
    return json.dumps(nodes, indent=indent)


@pytest.mark.parametrize("text", [
    _plan(12),
    _plan(12, indent=2),
    "```json\n" + _plan(12) + "\n```",
    "<think>one fetch per page</think>\n" + _plan(12),
    json.dumps({"rows": [{"year": 2000 + i, "label": f"quarter {i} revenue"} for i in range(20)]}),
])
def test_structured_items_that_differ_only_in_numbers_are_not_a_loop(text: str) -> None:
    assert repetition(text) is None
    assert repetition(text[: len(text) * 2 // 3]) is None  # nor is any prefix of it, as it streams


def test_a_plan_writing_the_same_node_again_and_again_is_still_a_loop() -> None:
    node = json.dumps({"id": "n1", "tool": "fetch_page", "params": {"i": 1}})
    assert repetition("[" + ", ".join([node] * 12), structured=True) is not None


def test_text_the_caller_says_is_structured_is_not_folded() -> None:
    plan = "".join(f"{i}. fetch_page(report='annual report', i={i})\n" for i in range(1, 13))
    assert repetition(plan) is not None  # as an answer, a numbered list of near-identical steps is a loop
    assert repetition(plan, structured=True) is None  # as a plan (LLMCompiler's numbered form) it is not


@pytest.mark.parametrize(("text", "structured"), [
    ('[{"id": "n1"}]', True), ('```json\n[\n  {"id": 1}', True), ("[1, 2, 3]", True), ('{"plan": []}', True),
    ("[]", True), ("[a link](https://example.com) to the docs", False), ("{curly} prose", False), ("Sure: [1]", False),
])
def test_json_is_told_from_prose_that_opens_with_a_bracket(text: str, structured: bool) -> None:
    assert looks_structured(text) is structured
