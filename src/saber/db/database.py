"""``Database``: one SQLAlchemy engine (and so one connection pool) per database per process.

The knowledge base, memory and checkpoints open the same target (the SQLite file under
``SABER_HOME`` or the ``database_url``) and get the same ``Database``: they share its pool.
Opening one also brings its schema to the newest migration (see ``saber.db.migrate``).

Statements are plain SQL with ``?`` placeholders, adapted here (and only here) to the driver's
``%s``. Every call is blocking: synchronous stores are run by their callers in worker threads,
async stores hop there with ``asyncio.to_thread``, so no driver call runs on the event loop.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, cast

import sqlalchemy as sa
from sqlalchemy import event, exc
from sqlalchemy.engine import Connection
from sqlalchemy.pool import StaticPool

DEFAULT_POOL_SIZE = 5
"""Connections a process keeps open per database (the ``db_pool_size`` setting); as many again
may be opened for bursts."""
BUSY_TIMEOUT_MS = 10_000

Dialect = Literal["sqlite", "postgresql"]


class DatabaseError(Exception):
    """The database could not be opened, reached or migrated; the message says which (never a password)."""


def mask_url(url: str) -> str:
    """The URL with any password replaced by ``***``."""
    try:
        return sa.make_url(url).render_as_string(hide_password=True)
    except exc.ArgumentError:
        return url.split("@")[-1]


def engine_url(target: str | Path) -> sa.URL:
    """A SQLite path or a ``postgresql://`` URL as SQLAlchemy's URL (driver: sqlite3 or psycopg 3)."""
    text = str(target)
    if "://" not in text:
        path = text if text == ":memory:" else str(Path(text).expanduser().absolute())
        return sa.URL.create("sqlite", database=path)
    scheme = text.split("://", 1)[0]
    if scheme in ("postgres", "postgresql", "postgresql+psycopg"):
        return sa.make_url("postgresql+psycopg://" + text.split("://", 1)[1])
    if scheme == "sqlite":
        return sa.make_url(text)
    raise DatabaseError(f"unsupported database URL scheme {scheme!r}: use postgresql:// (or a SQLite file path)")


class Rows(Protocol):
    """What a statement returns: rows as tuples, and how many rows it changed."""

    rowcount: int

    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


class Tx:
    """One transaction on one pooled connection: ``execute`` with ``?`` placeholders."""

    def __init__(self, conn: Connection, dialect: Dialect, cache: dict[str, str]) -> None:
        self.conn = conn
        self.dialect = dialect
        self._cache = cache

    def _sql(self, statement: str) -> str:
        if self.dialect == "sqlite":
            return statement
        query = self._cache.get(statement)
        if query is None:
            query = self._cache[statement] = statement.replace("?", "%s")
        return query

    def execute(self, statement: str, params: Sequence[Any] = ()) -> Rows:
        return cast(Rows, self.conn.exec_driver_sql(self._sql(statement), tuple(params)))

    def executemany(self, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            self.conn.exec_driver_sql(self._sql(statement), [tuple(r) for r in rows])

    @property
    def driver_connection(self) -> Any:
        """The sqlite3 or psycopg connection under this transaction (for COPY and the like)."""
        return self.conn.connection.driver_connection


class Database:
    """Open with ``open_database``; ``close`` when done (the last close disposes the pool)."""

    def __init__(self, target: str | Path, *, pool_size: int = DEFAULT_POOL_SIZE, connect_timeout: float = 10.0) -> None:
        if pool_size < 1:
            raise ValueError(f"pool_size: must be at least 1, got {pool_size}")
        self.url = engine_url(target)
        self.dialect: Dialect = "sqlite" if self.url.get_backend_name() == "sqlite" else "postgresql"
        self.display = mask_url(str(target)) if "://" in str(target) else str(self.url.database)
        self.pool_size = pool_size
        self._sql_cache: dict[str, str] = {}
        self._refs = 0
        self._memory_lock: threading.RLock | None = None
        if self.dialect == "sqlite":
            self.engine = self._sqlite_engine(pool_size)
        else:
            self.engine = sa.create_engine(
                self.url, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True,
                connect_args={"connect_timeout": max(1, int(connect_timeout))},
            )
            event.listen(self.engine, "connect", _register_vector)

    def _sqlite_engine(self, pool_size: int) -> sa.Engine:
        memory = self.url.database in (None, "", ":memory:")
        if not memory:
            Path(str(self.url.database)).parent.mkdir(parents=True, exist_ok=True)
        args = {"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000}
        if memory:  # one connection, or every checkout would see its own empty database
            engine = sa.create_engine(self.url, poolclass=StaticPool, connect_args=args)
        else:
            engine = sa.create_engine(self.url, pool_size=pool_size, max_overflow=pool_size, connect_args=args)
        event.listen(engine, "connect", _sqlite_pragmas)
        self._memory_lock = threading.RLock() if memory else None
        return engine

    # -- transactions ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self, *, write: bool = False, durable: bool = False) -> Iterator[Tx]:
        """A transaction on a pooled connection: committed on exit, rolled back on error.

        On SQLite ``write`` takes the write lock at the start (``BEGIN IMMEDIATE``), so a
        read-then-write cannot be overtaken by another writer; ``durable`` makes this commit
        survive power loss (``synchronous=FULL``: the WAL is fsynced before COMMIT returns),
        where the default (NORMAL) survives a crash of the process but may lose the last
        commits on power loss. PostgreSQL commits are durable as the server is configured."""
        with self._memory_lock or contextlib.nullcontext(), self.engine.connect() as conn:
            if self.dialect == "sqlite":
                if durable:
                    conn.exec_driver_sql("PRAGMA synchronous = FULL")
                conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield Tx(conn, self.dialect, self._sql_cache)
            except BaseException:
                conn.rollback()
                raise
            else:
                conn.commit()
            finally:
                if durable and self.dialect == "sqlite":
                    conn.exec_driver_sql("PRAGMA synchronous = NORMAL")
                    conn.commit()

    def is_unique_violation(self, error: BaseException) -> bool:
        return isinstance(error, exc.IntegrityError) and _unique(error.orig)

    def close(self) -> None:
        _release(self)


def _unique(orig: BaseException | None) -> bool:
    if orig is None:
        return False
    if type(orig).__name__ == "UniqueViolation":
        return True
    return "UNIQUE" in str(orig)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # Transactions are begun explicitly (BEGIN / BEGIN IMMEDIATE), not by the sqlite3 module.
    dbapi_connection.isolation_level = None
    for pragma in (f"busy_timeout = {BUSY_TIMEOUT_MS}", "journal_mode = WAL", "synchronous = NORMAL",
                   "foreign_keys = ON"):
        dbapi_connection.execute(f"PRAGMA {pragma}")


def _register_vector(dbapi_connection: Any, _record: Any) -> None:
    """pgvector's types on every new connection, when the extension is installed in this database."""
    import psycopg

    try:
        from pgvector.psycopg import register_vector
    except ImportError:  # pgvector is only needed by the knowledge base
        return
    try:
        register_vector(dbapi_connection)
    except psycopg.ProgrammingError:  # no vector type (yet): memory and checkpoints do not need it
        pass
    dbapi_connection.rollback()


# -- one Database per target per process -------------------------------------------------------

_open: dict[str, Database] = {}
_registry_lock = threading.Lock()

VERSION_TABLE = "saber_schema_version"
"""Alembic's version table in Saber's databases."""
_VERSIONS = Path(__file__).with_name("migrations") / "versions"


def newest_revision() -> str:
    """The newest migration this version of Saber has, read from the migration files' names
    (``NNNN_what.py``, whose revision is ``NNNN``: a test holds them to it) without loading Alembic."""
    return max(path.name.split("_", 1)[0] for path in _VERSIONS.glob("[0-9][0-9][0-9][0-9]_*.py"))


def _at_newest_revision(db: Database) -> bool:
    try:
        with db.transaction() as tx:
            row = tx.execute(f"SELECT version_num FROM {VERSION_TABLE}").fetchone()
    except Exception:  # no table yet, or the database is unreachable: the upgrade says which
        return False
    return row is not None and row[0] == newest_revision()


def open_database(target: str | Path, *, pool_size: int | None = None, connect_timeout: float = 10.0) -> Database:
    """The process's ``Database`` for ``target`` (created, connected and migrated on first open).

    Every store opened on the same target shares it, and its pool; ``pool_size`` counts only
    when the first store opens it. Raises DatabaseError when it cannot be reached or migrated."""
    key = engine_url(target).render_as_string(hide_password=False)
    with _registry_lock:
        db = _open.get(key)
        if db is None:
            try:
                db = Database(target, pool_size=pool_size or DEFAULT_POOL_SIZE, connect_timeout=connect_timeout)
            except OSError as exc:
                where = exc.filename if exc.filename is not None else target
                reason = "exists and is not a folder (check SABER_HOME)" \
                    if isinstance(exc, FileExistsError | NotADirectoryError) else (exc.strerror or str(exc))
                raise DatabaseError(f"cannot create the database {target}: {where}: {reason}") from None
            try:
                if not _at_newest_revision(db):  # the usual case needs no Alembic (a costly import)
                    from saber.db.migrate import upgrade

                    upgrade(db)
            except BaseException:
                db.engine.dispose()
                raise
            _open[key] = db
        db._refs += 1
        return db


def _release(db: Database) -> None:
    with _registry_lock:
        db._refs -= 1
        if db._refs > 0:
            return
        for key, value in list(_open.items()):
            if value is db:
                del _open[key]
    db.engine.dispose()
