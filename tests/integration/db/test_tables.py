"""The Core description of the tables (``saber.db.tables``), which every store's statements are
compiled from, is the schema the migrations build: on SQLite and on PostgreSQL, a freshly migrated
database has each described table with the same columns, the same NULL rules and the same primary
key. A statement compiled from a description that drifted would name a column that is not there."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from saber.db import open_database
from saber.db.tables import metadata


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def migrated(request: pytest.FixtureRequest, tmp_path: Path) -> sa.Inspector:
    target = str(tmp_path / "saber.db") if request.param == "sqlite" else str(request.getfixturevalue("pgvector_url"))
    db = open_database(target)
    request.addfinalizer(db.close)
    return sa.inspect(db.engine)


def test_every_described_table_is_the_migrated_one(migrated: sa.Inspector) -> None:
    existing = set(migrated.get_table_names())
    for table in metadata.sorted_tables:
        assert table.name in existing, f"{table.name}: described, but no migration creates it"
        columns = {c["name"]: c for c in migrated.get_columns(table.name)}
        assert set(columns) == {c.name for c in table.columns}, f"{table.name}: columns differ"
        for column in (c for c in table.columns if not c.primary_key):  # SQLite lets a TEXT key be NULL
            assert columns[column.name]["nullable"] == column.nullable, f"{table.name}.{column.name}: NULL rule differs"
        key = migrated.get_pk_constraint(table.name)["constrained_columns"]
        assert set(key) == {c.name for c in table.primary_key}, f"{table.name}: primary key differs"


def test_a_drifted_description_is_caught(migrated: sa.Inspector) -> None:
    """The check above can fail: a column the migrations never made is seen as missing."""
    described = {c.name for c in metadata.tables["saber_approvals"].columns} | {"approved_by_robot"}
    assert described != {c["name"] for c in migrated.get_columns("saber_approvals")}
