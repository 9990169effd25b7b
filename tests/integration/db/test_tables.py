"""The Core description of the tables (``saber.db.tables``), which every store's statements are
compiled from, is the schema the migrations build: on SQLite and on PostgreSQL, a freshly migrated
database has each described table with the same columns, the same NULL rules and the same primary
key. A statement compiled from a description that drifted would name a column that is not there."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from saber.db import open_database
from saber.db.tables import metadata
from saber.rag.store import open_store


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def migrated(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, sa.Inspector]]:
    """(dialect, an inspector of a database migrated to the newest revision)."""
    sqlite = request.param == "sqlite"
    if not sqlite:
        import pgvector.sqlalchemy  # noqa: F401  (teaches the inspector pgvector's column type)
    target = str(tmp_path / "saber.db") if sqlite else str(request.getfixturevalue("pgvector_url"))
    db = open_database(target)
    knowledge = open_store(None, target) if sqlite else open_store(target)
    knowledge.ensure_embedding("test-embedder", 4)  # rag_chunks is the store's own, sized for its embedder
    try:
        yield request.param, sa.inspect(db.engine)
    finally:
        knowledge.close()
        db.close()


def test_every_described_table_is_the_migrated_one(migrated: tuple[str, sa.Inspector]) -> None:
    """A table marked with its ``dialects`` (the run queue's: PostgreSQL only) is checked on those;
    one marked ``partial`` (procrastinate's, which the queue reads) has at least the described columns."""
    dialect, inspector = migrated
    existing = set(inspector.get_table_names())
    for table in metadata.sorted_tables:
        if dialect not in table.info.get("dialects", ("sqlite", "postgresql")):
            assert table.name not in existing, f"{table.name}: exists, but is not described for {dialect}"
            continue
        assert table.name in existing, f"{table.name}: described, but no migration creates it"
        columns = {c["name"]: c for c in inspector.get_columns(table.name)}
        described = {c.name for c in table.columns}
        if table.info.get("partial"):
            assert described <= set(columns), f"{table.name}: described columns missing: {described - set(columns)}"
        else:
            assert set(columns) == described, f"{table.name}: columns differ"
        for column in (c for c in table.columns if not c.primary_key):  # SQLite lets a TEXT key be NULL
            assert columns[column.name]["nullable"] == column.nullable, f"{table.name}.{column.name}: NULL rule differs"
        key = inspector.get_pk_constraint(table.name)["constrained_columns"]
        assert set(key) == {c.name for c in table.primary_key}, f"{table.name}: primary key differs"


def test_a_drifted_description_is_caught(migrated: tuple[str, sa.Inspector]) -> None:
    """The check above can fail: a column the migrations never made is seen as missing."""
    _, inspector = migrated
    described = {c.name for c in metadata.tables["saber_approvals"].columns} | {"approved_by_robot"}
    assert described != {c["name"] for c in inspector.get_columns("saber_approvals")}
