"""Opening a database already at the newest revision does not load Alembic (a costly import for
every CLI command); the migration files' names say their revisions, which that check relies on."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from saber.db import migrate
from saber.db.revision import newest_revision

VERSIONS = Path(migrate.__file__).with_name("migrations") / "versions"


def test_each_migration_file_is_named_after_its_revision_and_the_newest_is_alembics_head() -> None:
    files = sorted(VERSIONS.glob("*.py"))
    assert files
    for path in files:
        assigned = {t.id: n.value.value for n in ast.parse(path.read_text()).body if isinstance(n, ast.Assign)
                    for t in n.targets if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant)}
        assert assigned["revision"] == path.name.split("_", 1)[0], path.name
    assert newest_revision() == migrate.head()


def test_a_database_at_the_newest_revision_opens_without_alembic(tmp_path: Path) -> None:
    db = tmp_path / "saber.db"
    script = ("import sys; from saber.db import open_database; open_database({path!r}); "
              "print('alembic' in sys.modules)")
    first = subprocess.run([sys.executable, "-c", script.format(path=str(db))], capture_output=True, text=True, check=True)
    again = subprocess.run([sys.executable, "-c", script.format(path=str(db))], capture_output=True, text=True, check=True)
    assert first.stdout.strip() == "True", "a new database is migrated with Alembic"
    assert again.stdout.strip() == "False", "one already migrated is opened without it"


def test_a_database_behind_the_newest_revision_is_still_upgraded(tmp_path: Path) -> None:
    from saber.db.database import Database, DatabaseError, open_database

    path = tmp_path / "saber.db"
    db = Database(path, pool_size=1, connect_timeout=5)
    with db.transaction(write=True) as tx:
        tx.execute("CREATE TABLE saber_schema_version (version_num VARCHAR(32) NOT NULL PRIMARY KEY)")
        tx.execute("INSERT INTO saber_schema_version VALUES ('0000')")
    db.dispose()
    with pytest.raises(DatabaseError, match="revision 0000"):  # the upgrade looks at it, not the fast path
        open_database(path)


def test_the_always_migrate_switch_asks_alembic_on_every_open(tmp_path: Path) -> None:
    """``SABER_DB_ALWAYS_MIGRATE=1`` is the old behaviour ``bench/ingest_cli.py`` measures against."""
    import os

    db = tmp_path / "saber.db"
    script = (f"import sys; from saber.db import open_database; open_database({str(db)!r}); "
              "print('alembic' in sys.modules)")
    subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    env = {**os.environ, "SABER_DB_ALWAYS_MIGRATE": "1"}
    forced = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env)
    assert forced.stdout.strip() == "True"
