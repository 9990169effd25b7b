"""``Database``: one SQLAlchemy engine, and so one connection pool, per database per process.

The knowledge base, memory and checkpoints open the same target (the SQLite file under
``SABER_HOME`` or the ``database_url``) and get the same ``Database``: they share its engine's
pool. Opening one also brings its schema to the newest migration (see ``saber.db.migrate``).

Both databases run on a SQLAlchemy 2 engine and its pool (``QueuePool``: ``database.pool_size``
connections kept, as many again opened for bursts, a 30 s wait when all are busy). A SQLite file
gets ``pool_pre_ping`` off (nothing can drop a file's connection) and its pragmas on every new
connection; ``:memory:`` is one connection (``StaticPool``, as SQLAlchemy's SQLite notes advise
for a memory database shared by threads) that one thread at a time holds; PostgreSQL (psycopg 3)
gets ``pool_pre_ping`` on, so a connection a server restart killed is replaced at checkout.

A transaction borrows a connection from the pool and runs its statements on the driver's own
connection (``sqlite3`` / psycopg): what SQLAlchemy's ``Connection`` adds per statement (result
objects, type processing) cost about 5× a checkpoint write's CPU, and these statements need none
of it. The stores' statements are SQLAlchemy Core compiled ahead of time (``saber.db.statements``),
run with ``Tx.run`` and named parameters; ``Tx.execute`` takes plain SQL with ``?`` placeholders
(adapted here to psycopg's ``%s``) for what is left as text (DDL, ``SET LOCAL``). Every call is blocking: synchronous stores are run by their callers in worker threads,
async stores hop there with ``asyncio.to_thread``, so no driver call runs on the event loop.

SQLAlchemy is imported when the first database is opened, never by ``import saber.db``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from saber.config.database_url import POSTGRES_SCHEMES as _POSTGRES_SCHEMES
from saber.config.database_url import mask_url as mask_url
from saber.config.database_url import postgres_url_problem as postgres_url_problem
from saber.db.errors import DatabaseError as DatabaseError
from saber.db.oneshot import in_one_shot
from saber.db.revision import VERSION_TABLE as VERSION_TABLE
from saber.db.revision import newest_revision as newest_revision
from saber.db.statements import Statement

if TYPE_CHECKING:
    import sqlalchemy as sa
    from sqlalchemy.engine import Connection

DEFAULT_POOL_SIZE = 5
"""Connections a process keeps open per database (the ``database.pool_size`` setting: the engine's
``pool_size``); as many again may be opened for bursts (its ``max_overflow``)."""

POOL_TIMEOUT = 30.0
"""Seconds a checkout waits for a connection when every one is in use (SQLAlchemy's default)."""

BUSY_TIMEOUT_MS = 10_000
_PRAGMAS = (f"busy_timeout = {BUSY_TIMEOUT_MS}", "journal_mode = WAL", "synchronous = NORMAL", "foreign_keys = ON")

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
    if path is not None:  # what SQLAlchemy renders for it
        return f"sqlite:///{path}"
    return engine_url(target).render_as_string(hide_password=False)


class Rows(Protocol):
    """What a statement returns: rows as tuples, and how many rows it changed."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


class Tx:
    """One transaction on one pooled connection: ``run`` a compiled Core statement, or ``execute`` SQL text.

    ``conn`` is the driver's connection the pool lent: a ``sqlite3.Connection`` or a
    ``psycopg.Connection``."""

    def __init__(self, conn: Any, dialect: Dialect, cache: dict[str, str]) -> None:
        self.conn = conn
        self.dialect = dialect
        self._cache = cache

    def _sql(self, statement: str) -> str:
        query = self._cache.get(statement)
        if query is None:
            query = self._cache[statement] = statement.replace("?", "%s")
        return query

    def run(self, statement: Statement, params: Mapping[str, Any] | None = None) -> Rows:
        """A compiled Core statement (see ``saber.db.statements``) with its named parameters."""
        sql = statement.sqlite if self.dialect == "sqlite" else statement.postgresql
        if sql is None:
            sql = statement.sql(self.dialect)  # raises, naming the statement
        return self.conn.execute(sql, _named_without_nul(params) if params else {})  # type: ignore[no-any-return]

    def run_many(self, statement: Statement, rows: Sequence[Mapping[str, Any]]) -> None:
        """A compiled Core statement once per row of named parameters (one driver call)."""
        if not rows:
            return
        sql = statement.sql(self.dialect)
        if self.dialect == "sqlite":
            self.conn.executemany(sql, [_named_without_nul(r) for r in rows])
        else:
            with self.conn.cursor() as cur:
                cur.executemany(sql, [_named_without_nul(r) for r in rows])

    def execute(self, statement: str, params: Sequence[Any] = ()) -> Rows:
        if self.dialect == "sqlite":
            return self.conn.execute(statement, _without_nul(params))  # type: ignore[no-any-return]
        return self.conn.execute(self._sql(statement), _without_nul(params) if params else None)  # type: ignore[no-any-return]

    def executemany(self, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        if self.dialect == "sqlite":
            self.conn.executemany(statement, [_without_nul(r) for r in rows])
        else:
            with self.conn.cursor() as cur:
                cur.executemany(self._sql(statement), [_without_nul(r) for r in rows])

    @property
    def driver_connection(self) -> Any:
        """The sqlite3 or psycopg connection under this transaction (for COPY and the like)."""
        return self.conn


def _named_without_nul(params: Mapping[str, Any]) -> Mapping[str, Any]:
    """``_without_nul`` for named parameters."""
    for value in params.values():
        if isinstance(value, str) and "\x00" in value:
            return {k: v.replace("\x00", "") if isinstance(v, str) else v for k, v in params.items()}
    return params


def _without_nul(params: Sequence[Any]) -> tuple[Any, ...]:
    """PostgreSQL text cannot hold NUL: a NUL that reached a write (an answer quoting a binary tool
    result, a model's output) is dropped, as documents drop theirs, rather than failing the write;
    on SQLite too, so both stores keep the same text. Ids and queries never get here with one:
    they are refused at the edge."""
    return tuple(p.replace("\x00", "") if isinstance(p, str) and "\x00" in p else p for p in params)


class Database:
    """Open with ``open_database``; ``close`` when done (the last close disposes of the engine's pool).

    ``pooled=False`` (a SQLite file in a one-shot command: see ``saber.db.one_shot``) keeps no
    pool: each transaction opens its own ``sqlite3`` connection with the same settings and closes
    it, as SQLAlchemy's ``NullPool`` would, without loading SQLAlchemy; the engine (with a
    ``NullPool``) is made only if a migration needs it."""

    def __init__(self, target: str | Path, *, pool_size: int = DEFAULT_POOL_SIZE, connect_timeout: float = 10.0,
                 pool_timeout: float = POOL_TIMEOUT, pooled: bool = True) -> None:
        if pool_size < 1:
            raise ValueError(f"pool_size: must be at least 1, got {pool_size}")
        self._target = target
        self.pool_size = pool_size
        self.pool_timeout = pool_timeout
        self._connect_timeout = connect_timeout
        self._sql_cache: dict[str, str] = {}
        self._refs = 0
        self._engine: sa.Engine | None = None
        self._exclusive: threading.RLock | None = None
        """``:memory:`` only: held from checkout to checkin (its one connection serves one thread at a time)."""
        path = sqlite_path(target)
        self._path = path
        self.dialect: Dialect = "sqlite" if path is not None else "postgresql"
        self.pooled = pooled or path is None or path == ":memory:"
        if path is not None:
            self.display = str(target) if "://" in str(target) else path
            if path == ":memory:":  # one connection, or every checkout would see its own empty database
                self._exclusive = threading.RLock()
            else:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
        else:
            self.display = mask_url(str(target))
        if self.pooled:
            self._engine = self._create_engine()

    def _create_engine(self) -> sa.Engine:
        from sqlalchemy import create_engine, event
        from sqlalchemy.pool import NullPool, QueuePool, StaticPool

        url = engine_url(self._target)
        if self._path is None:
            engine = create_engine(
                url, poolclass=QueuePool, pool_size=self.pool_size, max_overflow=self.pool_size,
                pool_timeout=self.pool_timeout, pool_pre_ping=True,
                connect_args={"connect_timeout": max(1, int(self._connect_timeout))},
            )
            event.listen(engine, "connect", _register_vector)
            return engine
        connect_args = {"timeout": BUSY_TIMEOUT_MS / 1000, "check_same_thread": False, "isolation_level": None}
        if self._path == ":memory:":
            engine = create_engine(url, poolclass=StaticPool, connect_args=connect_args)
        elif not self.pooled:
            engine = create_engine(url, poolclass=NullPool, connect_args=connect_args)
        else:
            engine = create_engine(
                url, poolclass=QueuePool, pool_size=self.pool_size, max_overflow=self.pool_size,
                pool_timeout=self.pool_timeout, pool_pre_ping=False, pool_reset_on_return=None,
                connect_args=connect_args,
            )
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine

    @property
    def engine(self) -> sa.Engine:
        """The SQLAlchemy engine and its pool (made on first use when the database is not pooled)."""
        if self._engine is None:
            self._engine = self._create_engine()
        return self._engine

    @property
    def url(self) -> sa.URL:
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
        with self._borrowed(durable=durable) as conn:
            if self.dialect == "sqlite":
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield Tx(conn, self.dialect, self._sql_cache)
            except BaseException:
                conn.rollback()
                raise
            conn.commit()

    @contextlib.contextmanager
    def _borrowed(self, *, durable: bool = False) -> Iterator[Any]:
        """The driver connection of one checkout from the engine's pool, given back as it came:
        outside a transaction, at synchronous NORMAL. One whose COMMIT or ROLLBACK failed is rolled
        back; one that cannot be (a lost connection) is invalidated: the pool closes it rather than
        lend it again."""
        if not self.pooled:
            with self._unpooled(durable=durable) as own:
                yield own
            return
        with self._exclusive if self._exclusive is not None else contextlib.nullcontext():
            try:
                pooled = self.engine.pool.connect()
            except Exception as error:
                timeout = _pool_timeout(self, error)
                if timeout is None:
                    raise
                raise timeout from None
            conn: Any = pooled.driver_connection
            try:
                if durable and self.dialect == "sqlite":
                    conn.execute("PRAGMA synchronous = FULL")
                yield conn
            finally:
                try:
                    if not _idle(conn, self.dialect):
                        conn.rollback()
                    if durable and self.dialect == "sqlite":
                        conn.execute("PRAGMA synchronous = NORMAL")
                    usable = _idle(conn, self.dialect)
                except Exception:
                    usable = False
                if not usable and self._exclusive is None:  # the one memory connection is the database: kept
                    pooled.invalidate()
                pooled.close()

    @contextlib.contextmanager
    def _unpooled(self, *, durable: bool) -> Iterator[sqlite3.Connection]:
        """A connection of its own for one transaction, closed after it."""
        assert self._path is not None
        conn = sqlite3.connect(self._path, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False,
                               isolation_level=None)
        try:
            _sqlite_pragmas(conn, None)
            if durable:
                conn.execute("PRAGMA synchronous = FULL")
            yield conn
        finally:
            conn.close()  # a transaction still open is rolled back

    @contextlib.contextmanager
    def connection(self, *, write: bool = False) -> Iterator[Connection]:
        """A SQLAlchemy ``Connection`` in one transaction (what Alembic runs on): committed on
        exit, rolled back on error; on SQLite begun as ``transaction`` begins one."""
        with self._exclusive if self._exclusive is not None else contextlib.nullcontext(), \
                self.engine.connect() as conn:
            if self.dialect == "sqlite":
                conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield conn
            except BaseException:
                conn.rollback()
                raise
            conn.commit()

    def is_unique_violation(self, error: BaseException) -> bool:
        if isinstance(error, sqlite3.IntegrityError):
            return "UNIQUE" in str(error)
        if self.dialect == "sqlite":
            return False
        if type(error).__name__ == "UniqueViolation":
            return True
        from sqlalchemy import exc

        return isinstance(error, exc.IntegrityError) and _unique(error.orig)

    def dispose(self) -> None:
        """Close every pooled connection not in use (one in use is closed when it is returned).
        ``close`` does this after the last user's close; a ``Database`` made without
        ``open_database`` calls it itself."""
        if self._engine is not None:
            self._engine.dispose()

    def close(self) -> None:
        _release(self)


class PoolTimeout(DatabaseError):
    """Every connection the pool may open stayed in use for the whole wait (``POOL_TIMEOUT``)."""


def _pool_timeout(db: Database, error: Exception) -> PoolTimeout | None:
    """SQLAlchemy's pool timeout as an error naming the database and the setting to raise."""
    from sqlalchemy import exc

    if not isinstance(error, exc.TimeoutError):
        return None
    return PoolTimeout(f"no connection to the database {db.display} came free in {db.pool_timeout:g} s: all "
                       f"{2 * db.pool_size} are in use (database.pool_size {db.pool_size}, as many again for bursts)")


def _idle(conn: Any, dialect: Dialect) -> bool:
    """The connection is usable and outside a transaction."""
    try:
        if dialect == "sqlite":
            return not conn.in_transaction
        from psycopg.pq import TransactionStatus

        return not conn.closed and conn.info.transaction_status == TransactionStatus.IDLE
    except Exception:  # a closed sqlite3 connection raises: not idle, not usable
        return False


def _unique(orig: BaseException | None) -> bool:
    if orig is None:
        return False
    if type(orig).__name__ == "UniqueViolation":
        return True
    return "UNIQUE" in str(orig)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    """Saber's settings on every new SQLite connection: a 10 s busy timeout, WAL, synchronous NORMAL
    (a transaction asks FULL for itself), foreign keys. Transactions are begun explicitly (BEGIN /
    BEGIN IMMEDIATE: ``isolation_level=None``), never by the sqlite3 module."""
    for pragma in _PRAGMAS:
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
    when the first store opens it. Inside ``saber.db.one_shot()`` a SQLite file gets a
    ``Database`` without a pool (its own, beside a pooled one opened outside the block).
    Raises DatabaseError when it cannot be reached or migrated."""
    pooled = not in_one_shot()
    key = _registry_key(target) + ("" if pooled else " (one-shot)")
    with _registry_lock:
        db = _open.get(key)
        if db is None:
            try:
                db = Database(target, pool_size=pool_size or DEFAULT_POOL_SIZE, connect_timeout=connect_timeout,
                              pooled=pooled)
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
