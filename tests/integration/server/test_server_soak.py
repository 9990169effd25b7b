"""The load and soak run of ``bench/server_soak.py``, short: ``saber serve`` in its own process,
200 streams held open while 1,000 chat requests are answered, then half a minute of mixed load
with clients hanging up mid-stream and reconnecting with ``Last-Event-ID``.
(``python bench/server_soak.py --minutes 30`` is the full soak.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

SOAK = Path(__file__).parents[3] / "bench" / "server_soak.py"


def test_held_streams_chat_load_and_hang_ups_answer_without_errors_or_leaks() -> None:
    src = str(Path(__file__).parents[3] / "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, str(SOAK), "--streams", "200", "--chats", "1000",
                           "--minutes", "0.5", "--max-rss-growth-mb", "64", "--max-fd-growth", "32", "--json"],
                          capture_output=True, text=True, env=env, timeout=840)
    assert done.stdout.strip(), done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    held, mixed = result["phase1"], result["phase2"]
    assert held["streams_open_after_chats"] == 200, held  # all held open while the chats were answered
    assert held["not_ok"] == {} and held["answers_ok"] == 1200, held  # every stream ended with done, every chat 200
    assert mixed["not_ok"] == {}, mixed  # no answer other than 200 under hang-ups and reconnections
    assert mixed["hung_up"] > 0 and mixed["reconnected"] > 0, mixed
    assert mixed["rss_growth_mb"] <= 64 and mixed["fd_growth"] <= 32, mixed
    assert result["ok"] and done.returncode == 0, done.stderr[-3000:]
