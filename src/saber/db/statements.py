"""``Statement``: one SQL statement written with SQLAlchemy Core and compiled ahead of time.

A store writes its statements with SQLAlchemy Core in a ``queries`` module, on the tables of
``saber.db.tables``; ``python -m saber.db.compile`` compiles each for SQLite and PostgreSQL into the
generated ``queries_sql.py`` beside it, and the store runs those with ``Tx.run``. So the statements
are Core (the schema in one place, checked against the migrations; the dialects' differences
rendered by SQLAlchemy), while running one costs what plain SQL on the driver costs: compiling or
executing a Core statement per call measured 5–8× a checkpoint write's CPU, and importing SQLAlchemy
at all costs a one-shot command a quarter of its time. A test fails when a generated file is not
what its Core statements compile to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Statement:
    """The SQL of one Core statement per dialect, with named parameters (``:name`` for SQLite,
    ``%(name)s`` for psycopg); ``None`` where the statement is not written for that dialect."""

    name: str
    sqlite: str | None
    postgresql: str | None

    def sql(self, dialect: str) -> str:
        text: str | None = getattr(self, dialect)
        if text is None:
            raise NotImplementedError(f"the statement {self.name} is not written for {dialect}")
        return text


@dataclass(frozen=True)
class PerDialect:
    """In a ``queries`` module: a statement written for each dialect on its own (a lock, the
    server's clock); a dialect left out has none. Holds Core statements; defined here, not in
    ``saber.db.compile``, so that ``python -m saber.db.compile`` and the modules it compiles see
    one class."""

    sqlite: Any = None
    postgresql: Any = None
