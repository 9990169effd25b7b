"""The layers of docs/architecture.md hold: ``lint-imports`` keeps the contracts in pyproject.toml,
and no module (nor top-level part) of ``saber`` is in an import cycle.

Imports inside functions count; imports under ``TYPE_CHECKING`` do not (they never run)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("saber", include_external_packages=False, exclude_type_checking_imports=True)


def test_lint_imports_keeps_every_contract() -> None:
    command = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert command, "lint-imports is not installed: pip install -e '.[dev]'"
    done = subprocess.run([command, "--no-cache"], cwd=ROOT, env=os.environ, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_no_module_is_in_an_import_cycle(graph: grimp.ImportGraph) -> None:
    cycles = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is not None:
                cycles.append(" -> ".join((importer, *back)))
    assert cycles == []


def test_no_top_level_part_is_in_an_import_cycle(graph: grimp.ImportGraph) -> None:
    parts = sorted(graph.find_children("saber"))
    assert {"saber.cli", "saber.agent", "saber.graph", "saber.config"} <= set(parts)
    cycles = [f"{a} <-> {b}" for a in parts for b in parts
              if a < b and graph.chain_exists(importer=a, imported=b, as_packages=True)
              and graph.chain_exists(importer=b, imported=a, as_packages=True)]
    assert cycles == []


def test_every_top_level_part_has_a_layer(graph: grimp.ImportGraph) -> None:
    """A new part is placed in the layers contract, or no contract would check its imports."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contracts if c["type"] == "layers")["layers"]
    placed = {name.strip() for row in layers for name in row.replace(":", "|").split("|")}
    assert graph.find_children("saber") - {"saber.__main__"} == placed
