"""The documentation site: it builds with ``mkdocs build --strict`` (broken links, a docstring
mkdocstrings cannot render, a page missing from the nav all fail it), and its Python examples run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def python_examples() -> list[tuple[str, str]]:
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for number, code in enumerate(re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL), 1):
            found.append((f"{page.relative_to(DOCS)}#{number}", code))
    return found


def test_every_guide_page_is_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert [p for p in pages if p not in nav] == []
    assert len(python_examples()) >= 6


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    graph = (tmp_path / "site" / "reference" / "graph" / "index.html").read_text(encoding="utf-8")
    assert 'id="saber.graph.GraphConfig.from_settings"' in graph  # the reference is generated from the code


@pytest.mark.slow
@pytest.mark.parametrize("where, code", python_examples(), ids=[w for w, _ in python_examples()])
def test_a_python_example_runs(where: str, code: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
    env["SABER_HOME"] = str(tmp_path / "home")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, f"{where}:\n{done.stderr}"
    assert done.stdout.strip(), f"{where} printed nothing"
