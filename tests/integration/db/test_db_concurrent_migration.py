"""Several processes opening (and so migrating) the same fresh database at the same moment:
every one succeeds, the migrations run exactly once, and the schema ends at the newest revision."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from saber.db import head, open_database

CHILD = """
import sys
from saber.db import current, open_database
target = sys.argv[1]
sys.stdin.readline()  # every process is started before any opens the database
db = open_database(target)
print(current(db))
with db.transaction() as tx:
    tx.execute("SELECT COUNT(*) FROM mem_memories").fetchone()
db.close()
"""
PROCESSES = 6


def migrate_at_once(target: str) -> list[str]:
    children = [
        subprocess.Popen([sys.executable, "-c", CHILD, target], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for _ in range(PROCESSES)
    ]
    for child in children:  # release them together
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    revisions = []
    for child in children:
        out, err = child.communicate(timeout=60)
        assert child.returncode == 0, err
        revisions.append(out.strip())
    return revisions


def _check(target: str) -> None:
    db = open_database(target)
    try:
        with db.transaction() as tx:
            assert tx.execute("SELECT version_num FROM saber_schema_version").fetchall() == [(head(),)]
            # the baseline inserts this row once: a second run of it would have made two
            assert tx.execute("SELECT COUNT(*) FROM rag_meta WHERE key = 'revision'").fetchone() == (1,)
    finally:
        db.close()


def test_processes_migrating_one_sqlite_file_at_once(tmp_path: Path) -> None:
    target = str(tmp_path / "saber.db")
    assert migrate_at_once(target) == [head()] * PROCESSES
    _check(target)


@pytest.mark.postgres
@pytest.mark.slow
def test_processes_migrating_one_postgres_database_at_once(pgvector_url: str) -> None:
    assert migrate_at_once(pgvector_url) == [head()] * PROCESSES
    _check(pgvector_url)
