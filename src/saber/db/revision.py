"""Which schema revision a database is at: Alembic's version table, and the newest revision this
Saber has (read from the migration files' names, without loading Alembic)."""

from __future__ import annotations

from pathlib import Path

VERSION_TABLE = "saber_schema_version"
"""Alembic's version table in Saber's databases."""
_VERSIONS = Path(__file__).with_name("migrations") / "versions"


def newest_revision() -> str:
    """The newest migration this version of Saber has, read from the migration files' names
    (``NNNN_what.py``, whose revision is ``NNNN``: a test holds them to it) without loading Alembic."""
    return max(path.name.split("_", 1)[0] for path in _VERSIONS.glob("[0-9][0-9][0-9][0-9]_*.py"))
