"""Versioned migrations (Alembic), applied when a process first opens a database and by
``saber db upgrade``.

Several processes may start at once: the whole upgrade runs in one transaction that first takes
a lock every other upgrader waits for (``BEGIN IMMEDIATE`` on SQLite, a transaction-scoped
advisory lock on PostgreSQL). The second one in finds the schema at the newest revision and
does nothing. DDL is transactional on both, so a failed migration leaves the old schema.

Alembic runs on a SQLAlchemy ``Connection`` from the database's own engine (``Database.connection``):
the migrated schema is the one every pooled connection sees.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import exc
from sqlalchemy.engine import Connection

from saber.db.errors import DatabaseError
from saber.db.revision import VERSION_TABLE

if TYPE_CHECKING:
    from saber.db.database import Database

_LOCK_KEY = 7_261_001
"""The advisory lock upgraders on one PostgreSQL database take (any number unique to Saber)."""


def _config(conn: Connection | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(Path(__file__).with_name("migrations")))
    if conn is not None:
        cfg.attributes["connection"] = conn
    return cfg


@contextlib.contextmanager
def _connection(db: Database, *, write: bool) -> Iterator[Connection]:
    """A SQLAlchemy connection in one transaction on ``db``'s engine: committed on exit, rolled back on error."""
    with db.connection(write=write) as conn:
        yield conn


def head() -> str:
    """The newest revision this version of Saber knows."""
    revision = ScriptDirectory.from_config(_config()).get_current_head()
    assert revision is not None
    return revision


def known(revision: str) -> bool:
    """Whether ``revision`` is one of this version's migrations."""
    try:
        return ScriptDirectory.from_config(_config()).get_revision(revision) is not None
    except CommandError:
        return False


def current(db: Database) -> str | None:
    """The revision the database is at (None before the first migration). Raises DatabaseError."""
    try:
        with _connection(db, write=False) as conn:
            return MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE}).get_current_revision()
    except (exc.SQLAlchemyError, sqlite3.Error) as error:
        raise _failure(db, error) from None


def upgrade(db: Database) -> str:
    """Bring the schema to the newest revision; returns it. Raises DatabaseError on failure."""
    try:
        with _connection(db, write=True) as conn:
            if db.dialect == "postgresql":
                conn.exec_driver_sql("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            ctx = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
            revision = ctx.get_current_revision()
            if revision is not None and not known(revision):
                raise DatabaseError(
                    f"the database {db.display} is at schema revision {revision}, which this version of Saber "
                    f"does not know (its newest is {head()}): a newer Saber migrated it; upgrade Saber"
                )
            if revision != head():
                command.upgrade(_config(conn), "head")
    except (exc.SQLAlchemyError, sqlite3.Error) as error:
        raise _failure(db, error) from None
    except OSError as error:
        raise DatabaseError(f"cannot open the database {db.display}: {error}") from None
    if db.dialect == "postgresql":
        db.engine.dispose()  # connections opened before pgvector was installed lack its types
    return head()


def _failure(db: Database, error: exc.SQLAlchemyError | sqlite3.Error) -> DatabaseError:
    """One line naming the database (password masked) and the driver's reason."""
    orig = getattr(error, "orig", None)
    reason = str(orig if orig is not None else error).strip().splitlines()[0]
    if isinstance(error, exc.OperationalError) and db.dialect == "postgresql":
        return DatabaseError(f"cannot connect to PostgreSQL at {db.display}: {reason}")
    return DatabaseError(f"cannot open or migrate the database {db.display}: {reason}")
