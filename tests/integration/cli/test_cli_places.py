"""Issue #33 item 1 as a user meets it: ``saber ask`` in a real process, no model, the geocoder
unreachable. Exemplar cities outside the hand table get their time from CLDR's names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CLOSED = "http://127.0.0.1:9"


def ask(query: str, home: Path) -> str:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
    environ.update({"SABER_HOME": str(home), "SABER_SEARCH_BACKEND": "none", "SABER_TOOLS_TIMEOUT": "5",
                    "SABER_WEATHER_GEOCODING_URL": f"{CLOSED}/v1/search",
                    "SABER_WEATHER_FORECAST_URL": f"{CLOSED}/v1/forecast"})
    done = subprocess.run([sys.executable, "-m", "saber.cli", "ask", query], env=environ, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(("query", "said"), [
    ("现在霍巴特几点了", "霍巴特现在是"),
    ("What time is it in Reykjavik?", "In Reykjavik (雷克雅未克), Iceland it is"),
])
def test_an_exemplar_city_gets_its_time_offline(tmp_path: Path, query: str, said: str) -> None:
    out = ask(query, tmp_path)
    assert said in out and "无法访问" not in out and "could not be reached" not in out


def test_an_ambiguous_name_is_said_and_an_unknown_one_is_honest(tmp_path: Path) -> None:
    out = ask("What time is it in Salvador?", tmp_path)
    assert "America/Bahia" in out and "America/El_Salvador" in out and "Current time" not in out
    out = ask("现在哥谭市几点了", tmp_path)
    assert "地名查询服务暂时无法访问（哥谭市）" in out
