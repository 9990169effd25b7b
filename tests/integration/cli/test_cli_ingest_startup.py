"""Issue #33 item 6: ``saber ingest`` into an existing knowledge base starts without Alembic (the
schema check reads the version table) and without pkg_resources (Chinese is segmented by rjieba,
whose dictionary is built in), and the note is searchable and embedded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

RUNNER = """
import contextlib, io, json, sys
from saber.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):
    main({argv!r})
sys.__stderr__.write(json.dumps({{"out": out.getvalue(), "modules": sorted(sys.modules)}}) + "\\n")
"""


def ingest(path: Path, home: Path) -> tuple[str, set[str]]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
    environ.update({"SABER_HOME": str(home)})
    done = subprocess.run([sys.executable, "-c", RUNNER.format(argv=["ingest", str(path)])], env=environ,
                          capture_output=True, text=True, timeout=300)
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return report["out"], set(report["modules"])


def test_ingest_into_an_existing_knowledge_base_loads_neither_alembic_nor_pkg_resources(tmp_path: Path) -> None:
    first, second = tmp_path / "first.md", tmp_path / "second.md"
    first.write_text("# 会议纪要\n\n订单服务将在三月前迁移到新集群。\n", encoding="utf-8")
    second.write_text("# Meeting notes\n\nThe topic orders-v2 replaces orders-v1; 预算审批单号 LIC-7731 已通过。\n",
                      encoding="utf-8")
    out, modules = ingest(first, tmp_path / "home")
    assert "1 added" in out and "alembic" in modules  # a new knowledge base is migrated
    out, modules = ingest(second, tmp_path / "home")
    assert "1 added" in out and "hybrid search ready" in out
    assert "rjieba" in modules and "alembic" not in modules and "pkg_resources" not in modules
