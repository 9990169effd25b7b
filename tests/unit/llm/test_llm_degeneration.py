"""Spotting a repetition loop in a stream's text (shaped like what SmolLM2-135M produced)."""

from __future__ import annotations

import pytest

from saber.llm.degeneration import repetition


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
