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
])
def test_loops_are_found(text: str) -> None:
    assert repetition(text) is not None


@pytest.mark.parametrize("text", [
    "",
    "Tokyo: 12:00 (Asia/Tokyo). Paris: sunny, 21°C, light wind from the west.",
    "北京现在是中午 12 点，天气晴，气温 21°C，东北风 2 级，空气质量良好，适合外出。",
    "1. ClusterIP — reachable inside the cluster.\n2. NodePort — a port on every node.\n3. LoadBalancer — a cloud balancer.\n",
    "| city | time |\n|---|---|\n| Tokyo | 12:00 |\n| Paris | 05:00 |\n",
])
def test_ordinary_text_is_not_a_loop(text: str) -> None:
    assert repetition(text) is None
