"""``Database``: one connection pool per database per process.

The knowledge base, memory and checkpoints open the same target (the SQLite file under
``SABER_HOME`` or the ``database_url``) and get the same ``Database``: they share its pool.
Opening one also brings its schema to the newest migration (see ``saber.db.migrate``).

SQLite runs on the standard library's ``sqlite3`` and its own small pool (``saber.db._sqlite``),
so a command on the default database never imports SQLAlchemy; PostgreSQL runs on a SQLAlchemy
engine (its pool checks a connection before use and opens extra ones for bursts), and Alembic's
migrations use SQLAlchemy on both.

Statements are plain SQL with ``?`` placeholders, adapted here (and only here) to the driver's
``%s``. Every call is blocking: synchronous stores are run by their callers in worker threads,
async stores hop there with ``asyncio.to_thread``, so no driver call runs on the event loop.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

from saber.config.database_url import POSTGRES_SCHEMES as _POSTGRES_SCHEMES
from saber.config.database_url import mask_url as mask_url
from saber.config.database_url import postgres_url_problem as postgres_url_problem
from saber.db._sqlite import BUSY_TIMEOUT_MS as BUSY_TIMEOUT_MS
from saber.db._sqlite import ConnectionPool, Pool, SharedConnection, connect
from saber.db._sqlite import PoolTimeout as PoolTimeout  # what a checkout raises when the pool stays full
from saber.db.errors import DatabaseError as DatabaseError
from saber.db.revision import VERSION_TABLE as VERSION_TABLE
from saber.db.revision import newest_revision as newest_revision

if TYPE_CHECKING:
    import sqlalchemy as sa
    from sqlalchemy.engine import Connection

DEFAULT_POOL_SIZE = 5
"""Connections a process keeps open per database (the ``db_pool_size`` setting); as many again
may be opened for bursts."""

Dialect = Literal["sqlite", "postgresql"]


def sqlite_path(target: str | Path) -> str | None:
    """The SQLite file (an absolute path) or ``:memory:`` that ``target`` names, None for a
    PostgreSQL URL. ``target`` is a path or a ``sqlite://`` URL in SQLAlchemy's forms
    (``sqlite:///relative.db``, ``sqlite:////absolute.db``, ``sqlite://`` for memory)."""
    text = str(target)
    if "://" not in text:
        return text if text == ":memory:" else str(Path(text).expanduser().absolute())
    scheme, rest = text.split("://", 1)
    if scheme in _POSTGRES_SCHEMES:
        return None
    if scheme != "sqlite":
        raise DatabaseError(f"unsupported database URL {mask_url(text)!r} (scheme {scheme!r}): "
                            "use postgresql://… or a SQLite file path")
    if rest in ("", "/", "/:memory:"):
        return ":memory:"
    if not rest.startswith("/") or "?" in rest:
        raise DatabaseError(f"unsupported SQLite URL {text!r}: use sqlite:///relative/path, "
                            "sqlite:////absolute/path (no options) or the file's path")
    return sqlite_path(rest[1:])


def engine_url(target: str | Path) -> sa.URL:
    """A SQLite path or a ``postgresql://`` URL as SQLAlchemy's URL (driver: sqlite3 or psycopg 3)."""
    import sqlalchemy as sa

    path = sqlite_path(target)
    if path is not None:
        return sa.URL.create("sqlite", database=path)
    return sa.make_url("postgresql+psycopg://" + str(target).split("://", 1)[1])


def _registry_key(target: str | Path) -> str:
    path = sqlite_path(target)
    if path is not None:  # what SQLAlchemy renders for it, without loading SQLAlchemy
        return f"sqlite:///{path}"
    return engine_url(target).render_as_string(hide_password=False)


class Rows(Protocol):
    """What a statement returns: rows as tuples, and how many rows it changed."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


class Tx:
    """One transaction on one pooled connection: ``execute`` with ``?`` placeholders.

    ``conn`` is a ``sqlite3.Connection`` on SQLite, a SQLAlchemy ``Connection`` on PostgreSQL."""

    def __init__(self, conn: sqlite3.Connection | Connection, dialect: Dialect, cache: dict[str, str]) -> None:
        self.conn = conn
        self.dialect = dialect
        self._cache = cache

    def _sql(self, statement: str) -> str:
        query = self._cache.get(statement)
        if query is None:
            query = self._cache[statement] = statement.replace("?", "%s")
        return query

    def execute(self, statement: str, params: Sequence[Any] = ()) -> Rows:
        if isinstance(self.conn, sqlite3.Connection):
            return self.conn.execute(statement, _without_nul(params))
        return cast(Rows, self.conn.exec_driver_sql(self._sql(statement), _without_nul(params)))

    def executemany(self, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        if isinstance(self.conn, sqlite3.Connection):
            self.conn.executemany(statement, [_without_nul(r) for r in rows])
        else:
            self.conn.exec_driver_sql(self._sql(statement), [_without_nul(r) for r in rows])

    @property
    def driver_connection(self) -> Any:
        """The sqlite3 or psycopg connection under this transaction (for COPY and the like)."""
        if isinstance(self.conn, sqlite3.Connection):
            return self.conn
        return self.conn.connection.driver_connection


def _without_nul(params: Sequence[Any]) -> tuple[Any, ...]:
    """PostgreSQL text cannot hold NUL: a NUL that reached a write (an answer quoting a binary tool
    result, a model's output) is dropped, as documents drop theirs, rather than failing the write;
    on SQLite too, so both stores keep the same text. Ids and queries never get here with one:
    they are refused at the edge."""
    return tuple(p.replace("\x00", "") if isinstance(p, str) and "\x00" in p else p for p in params)


class Database:
    """Open with ``open_database``; ``close`` when done (the last close closes the pool's connections)."""

    engine: sa.Engine
    """PostgreSQL only: the SQLAlchemy engine and its pool."""

    def __init__(self, target: str | Path, *, pool_size: int = DEFAULT_POOL_SIZE, connect_timeout: float = 10.0) -> None:
        if pool_size < 1:
            raise ValueError(f"pool_size: must be at least 1, got {pool_size}")
        self._target = target
        self.pool_size = pool_size
        self._sql_cache: dict[str, str] = {}
        self._refs = 0
        self._pool: Pool | None = None
        path = sqlite_path(target)
        self.dialect: Dialect = "sqlite" if path is not None else "postgresql"
        if path is not None:
            self.display = str(target) if "://" in str(target) else path
            if path == ":memory:":  # one connection, or every checkout would see its own empty database
                self._pool = SharedConnection(lambda: connect(path))
            else:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                self._pool = ConnectionPool(lambda: connect(path), size=pool_size, overflow=pool_size, name=path)
        else:
            from sqlalchemy import create_engine, event

            self.display = mask_url(str(target))
            self.engine = create_engine(
                engine_url(target), pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True,
                connect_args={"connect_timeout": max(1, int(connect_timeout))},
            )
            event.listen(self.engine, "connect", _register_vector)

    @property
    def url(self) -> sa.URL:
        """The target as SQLAlchemy's URL (loads SQLAlchemy)."""
        return engine_url(self._target)

    # -- transactions ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self, *, write: bool = False, durable: bool = False) -> Iterator[Tx]:
        """A transaction on a pooled connection: committed on exit, rolled back on error.

        On SQLite ``write`` takes the write lock at the start (``BEGIN IMMEDIATE``), so a
        read-then-write cannot be overtaken by another writer; ``durable`` makes this commit
        survive power loss (``synchronous=FULL``: the WAL is fsynced before COMMIT returns),
        where the default (NORMAL) survives a crash of the process but may lose the last
        commits on power loss. PostgreSQL commits are durable as the server is configured."""
        if self._pool is None:
            with self.engine.connect() as pg, self._committed(pg) as tx:
                yield tx
            return
        with self._sqlite_connection(durable=durable) as conn:
            if durable:
                conn.execute("PRAGMA synchronous = FULL")
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            with self._committed(conn) as tx:
                yield tx

    @contextlib.contextmanager
    def _committed(self, conn: sqlite3.Connection | Connection) -> Iterator[Tx]:
        """A ``Tx`` on ``conn``: committed when the block ends, rolled back when it raises (a
        cancellation included)."""
        try:
            yield Tx(conn, self.dialect, self._sql_cache)
        except BaseException:
            conn.rollback()
            raise
        conn.commit()

    @contextlib.contextmanager
    def _sqlite_connection(self, *, durable: bool) -> Iterator[sqlite3.Connection]:
        """A connection from the pool, put back as it came: outside a transaction, at synchronous NORMAL."""
        assert self._pool is not None
        conn = self._pool.checkout()
        broken = False
        try:
            yield conn
        finally:
            try:
                if conn.in_transaction:  # its COMMIT or ROLLBACK failed
                    conn.rollback()
                if durable:
                    conn.execute("PRAGMA synchronous = NORMAL")
            except sqlite3.Error:
                broken = True  # closed rather than kept in an unknown state
            self._pool.checkin(conn, discard=broken)

    def is_unique_violation(self, error: BaseException) -> bool:
        if isinstance(error, sqlite3.IntegrityError):
            return "UNIQUE" in str(error)
        if self.dialect == "sqlite":
            return False
        from sqlalchemy import exc

        return isinstance(error, exc.IntegrityError) and _unique(error.orig)

    def dispose(self) -> None:
        """Close every pooled connection (one in use when it is returned). ``close`` does this
        after the last user's close; a ``Database`` made without ``open_database`` calls it itself."""
        if self._pool is not None:
            self._pool.dispose()
        else:
            self.engine.dispose()

    def close(self) -> None:
        _release(self)


def _unique(orig: BaseException | None) -> bool:
    if orig is None:
        return False
    if type(orig).__name__ == "UniqueViolation":
        return True
    return "UNIQUE" in str(orig)


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


def _always_migrate() -> bool:
    """``SABER_DB_ALWAYS_MIGRATE=1`` asks Alembic on every open, as before the cheap check (for
    ``bench/ingest_cli.py``, which measures the difference, and for a schema in doubt)."""
    return os.environ.get("SABER_DB_ALWAYS_MIGRATE", "").strip().lower() in ("1", "true", "yes")


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
    key = _registry_key(target)
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
                if _always_migrate() or not _at_newest_revision(db):  # the usual case needs no Alembic (a costly import)
                    from saber.db.migrate import upgrade

                    upgrade(db)
            except BaseException:
                db.dispose()
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
    db.dispose()
