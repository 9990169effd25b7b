"""Versioned migrations (Alembic), applied when a process first opens a database and by
``saber db upgrade``.

Several processes may start at once: the whole upgrade runs in one transaction that first takes
a lock every other upgrader waits for (``BEGIN IMMEDIATE`` on SQLite, a transaction-scoped
advisory lock on PostgreSQL). The second one in finds the schema at the newest revision and
does nothing. DDL is transactional on both, so a failed migration leaves the old schema.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import exc

from saber.db.database import VERSION_TABLE, Database, DatabaseError, Tx

_LOCK_KEY = 7_261_001
"""The advisory lock upgraders on one PostgreSQL database take (any number unique to Saber)."""


def _config(tx: Tx | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(Path(__file__).with_name("migrations")))
    if tx is not None:
        cfg.attributes["connection"] = tx.conn
    return cfg


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
        with db.transaction() as tx:
            return MigrationContext.configure(tx.conn, opts={"version_table": VERSION_TABLE}).get_current_revision()
    except exc.SQLAlchemyError as error:
        raise _failure(db, error) from None


def upgrade(db: Database) -> str:
    """Bring the schema to the newest revision; returns it. Raises DatabaseError on failure."""
    try:
        with db.transaction(write=True) as tx:
            if db.dialect == "postgresql":
                tx.execute("SELECT pg_advisory_xact_lock(?)", (_LOCK_KEY,))
            ctx = MigrationContext.configure(tx.conn, opts={"version_table": VERSION_TABLE})
            revision = ctx.get_current_revision()
            if revision is not None and not known(revision):
                raise DatabaseError(
                    f"the database {db.display} is at schema revision {revision}, which this version of Saber "
                    f"does not know (its newest is {head()}): a newer Saber migrated it; upgrade Saber"
                )
            if revision != head():
                command.upgrade(_config(tx), "head")
    except exc.SQLAlchemyError as error:
        raise _failure(db, error) from None
    except OSError as error:
        raise DatabaseError(f"cannot open the database {db.display}: {error}") from None
    if db.dialect == "postgresql":
        db.engine.dispose()  # connections opened before pgvector was installed lack its types
    return head()


def _failure(db: Database, error: exc.SQLAlchemyError) -> DatabaseError:
    """One line naming the database (password masked) and the driver's reason."""
    orig = getattr(error, "orig", None)
    reason = str(orig if orig is not None else error).strip().splitlines()[0]
    if isinstance(error, exc.OperationalError) and db.dialect == "postgresql":
        return DatabaseError(f"cannot connect to PostgreSQL at {db.display}: {reason}")
    return DatabaseError(f"cannot open or migrate the database {db.display}: {reason}")
