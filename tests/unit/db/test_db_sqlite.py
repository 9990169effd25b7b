"""SQLite on the standard library's sqlite3: no SQLAlchemy once a file is migrated, the pool
(bursts, a full pool, connections always returned), concurrent writers, targets and URLs, and
migrations that every pooled connection sees."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from saber.db import migrate
from saber.db._sqlite import ConnectionPool, PoolTimeout, connect
from saber.db.database import Database, DatabaseError, engine_url, mask_url, open_database, sqlite_path

NO_SQLALCHEMY = """
import sys
from saber.agent.memory.sqlite_store import SQLiteMemoryStore
from saber.db import open_database
db = open_database(sys.argv[1])
with db.transaction(write=True) as tx:
    tx.execute("INSERT INTO mem_preferences (user_id, key, value, updated_at) VALUES (?, ?, ?, ?)", ("u", "k", "v", 1.0))
with db.transaction() as tx:
    assert tx.execute("SELECT value FROM mem_preferences").fetchall() == [("v",)]
db.close()
store = SQLiteMemoryStore(sys.argv[1])  # what a time query does with the database: its history
store.append_history("u", "user", "东京现在几点", keep=10, now=2.0)
store.close()
print(sorted(m for m in sys.modules if m.split(".")[0] in ("sqlalchemy", "alembic")))
"""


def test_a_migrated_sqlite_database_is_used_without_importing_sqlalchemy(tmp_path: Path) -> None:
    path = tmp_path / "saber.db"
    open_database(path).close()  # migrated (with Alembic and SQLAlchemy) in this process
    done = subprocess.run([sys.executable, "-c", NO_SQLALCHEMY, str(path)], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.strip() == "[]"


# -- the pool ------------------------------------------------------------------------------------


def _pool(tmp_path: Path, *, size: int, overflow: int, timeout: float = 30.0) -> ConnectionPool:
    path = str(tmp_path / "pool.db")
    return ConnectionPool(lambda: connect(path), size=size, overflow=overflow, timeout=timeout, name=path)


def _closed(conn: sqlite3.Connection) -> bool:
    try:
        conn.execute("SELECT 1")
    except sqlite3.ProgrammingError:
        return True
    return False


def test_a_burst_opens_overflow_connections_and_closes_them_when_they_come_back(tmp_path: Path) -> None:
    pool = _pool(tmp_path, size=2, overflow=2)
    conns = [pool.checkout() for _ in range(4)]
    assert len(set(conns)) == 4 and pool.open_connections == 4
    for conn in conns:
        pool.checkin(conn)
    assert pool.open_connections == 2  # the pool's size kept, the burst's extra ones closed
    assert [_closed(c) for c in conns] == [False, False, True, True]
    again = {pool.checkout(), pool.checkout()}
    assert again == set(conns[:2])  # kept connections are reused, not reopened
    pool.dispose()


def test_a_full_pool_waits_for_a_connection_then_raises_a_clear_error(tmp_path: Path) -> None:
    pool = _pool(tmp_path, size=1, overflow=1, timeout=0.05)
    first, second = pool.checkout(), pool.checkout()
    with pytest.raises(PoolTimeout, match=r"pool\.db came free in 0\.05 s: all 2 are in use \(database\.pool_size 1"):
        pool.checkout()
    got: list[sqlite3.Connection] = []
    pool.timeout = 30.0
    waiter = threading.Thread(target=lambda: got.append(pool.checkout()))
    waiter.start()  # blocks until a connection is returned (or finds it returned already)
    pool.checkin(first)
    waiter.join(timeout=30)
    assert got == [first] and pool.open_connections == 2
    pool.checkin(first)
    pool.checkin(second)
    pool.dispose()


def test_a_connection_that_fails_to_open_frees_its_place(tmp_path: Path) -> None:
    attempts: list[int] = []

    def flaky() -> sqlite3.Connection:
        attempts.append(1)
        if len(attempts) == 1:
            raise sqlite3.OperationalError("unable to open database file")
        return connect(str(tmp_path / "pool.db"))

    pool = ConnectionPool(flaky, size=1, overflow=0, timeout=0.05)
    with pytest.raises(sqlite3.OperationalError):
        pool.checkout()
    conn = pool.checkout()  # the failed open did not keep the only place
    assert pool.open_connections == 1
    pool.checkin(conn)
    pool.dispose()


def test_dispose_closes_idle_connections_now_and_busy_ones_when_returned(tmp_path: Path) -> None:
    pool = _pool(tmp_path, size=2, overflow=0)
    idle, busy = pool.checkout(), pool.checkout()
    pool.checkin(idle)
    pool.dispose()
    assert _closed(idle) and not _closed(busy)
    pool.checkin(busy)
    assert _closed(busy) and pool.open_connections == 0
    conn = pool.checkout()  # still usable, as a disposed SQLAlchemy engine is
    pool.checkin(conn)
    pool.dispose()


# -- transactions on the pool --------------------------------------------------------------------


@pytest.fixture
def db(tmp_path: Path) -> Database:
    """A Database made directly (no migration), with a table of its own."""
    database = Database(tmp_path / "t.db", pool_size=1)
    with database.transaction(write=True) as tx:
        tx.execute("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
        tx.execute("CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER "
                   "REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)")
        tx.execute("CREATE TABLE counter (n INTEGER NOT NULL)")
        tx.execute("INSERT INTO counter VALUES (0)")
    return database


def _pool_state(db: Database) -> tuple[int, int]:
    pool = db._pool
    assert isinstance(pool, ConnectionPool)
    return pool.open_connections, len(pool._busy)


class Cancelled(BaseException):
    """Like asyncio.CancelledError or KeyboardInterrupt: not an Exception."""


@pytest.mark.parametrize("error", [RuntimeError, Cancelled])
def test_an_error_in_a_transaction_rolls_back_and_returns_the_connection(db: Database, error: type) -> None:
    with pytest.raises(error), db.transaction(write=True, durable=True) as tx:
        tx.execute("INSERT INTO parent VALUES (1)")
        raise error("boom")
    assert _pool_state(db) == (1, 0)
    with db.transaction() as tx:
        assert tx.execute("SELECT COUNT(*) FROM parent").fetchone() == (0,)
        assert tx.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL again
    db.dispose()


def test_a_failed_commit_rolls_back_and_returns_the_connection(db: Database) -> None:
    with pytest.raises(sqlite3.IntegrityError, match="FOREIGN KEY"), db.transaction(write=True) as tx:
        tx.execute("INSERT INTO child VALUES (1, 42)")  # checked at COMMIT (deferred)
    assert _pool_state(db) == (1, 0)
    with db.transaction(write=True) as tx:  # BEGIN would fail on a connection still in the failed one
        assert tx.execute("SELECT COUNT(*) FROM child").fetchone() == (0,)
    db.dispose()


def test_statements_return_rows_and_counts(db: Database) -> None:
    with db.transaction(write=True) as tx:
        tx.executemany("INSERT INTO parent VALUES (?)", [(1,), (2,), (3,)])
        tx.executemany("INSERT INTO parent VALUES (?)", [])
        assert tx.execute("UPDATE parent SET id = id + 10 WHERE id > ?", (1,)).rowcount == 2
        assert tx.execute("SELECT id FROM parent ORDER BY id").fetchall() == [(1,), (12,), (13,)]
        assert isinstance(tx.driver_connection, sqlite3.Connection)
    db.dispose()


def test_unique_violations_are_told_from_other_errors(db: Database) -> None:
    with pytest.raises(sqlite3.IntegrityError) as duplicate, db.transaction(write=True) as tx:
        tx.execute("INSERT INTO parent VALUES (1)")
        tx.execute("INSERT INTO parent VALUES (1)")
    with pytest.raises(sqlite3.IntegrityError) as missing, db.transaction(write=True) as tx:
        tx.execute("INSERT INTO counter VALUES (NULL)")
    assert db.is_unique_violation(duplicate.value)
    assert not db.is_unique_violation(missing.value) and not db.is_unique_violation(RuntimeError("UNIQUE"))
    db.dispose()


def test_postgres_unique_violations_are_recognised_through_sqlalchemy() -> None:
    from psycopg.errors import NotNullViolation, UniqueViolation
    from sqlalchemy import exc

    pg = Database("postgresql://me:pw@127.0.0.1:1/x")  # no connection is made until a transaction
    try:
        assert pg.is_unique_violation(exc.IntegrityError("INSERT", (), UniqueViolation("duplicate key")))
        assert not pg.is_unique_violation(exc.IntegrityError("INSERT", (), NotNullViolation("null value")))
    finally:
        pg.dispose()


def test_concurrent_read_then_write_transactions_lose_no_update(tmp_path: Path) -> None:
    database = Database(tmp_path / "c.db", pool_size=2)  # 4 connections at most for 8 threads
    with database.transaction(write=True) as tx:
        tx.execute("CREATE TABLE counter (n INTEGER NOT NULL)")
        tx.execute("INSERT INTO counter VALUES (0)")
    threads, rounds = 8, 25
    start = threading.Barrier(threads)
    errors: list[BaseException] = []

    def increment() -> None:
        start.wait()
        try:
            for _ in range(rounds):
                with database.transaction(write=True) as tx:
                    n = tx.execute("SELECT n FROM counter").fetchone()[0]
                    tx.execute("UPDATE counter SET n = ?", (n + 1,))
        except BaseException as exc:  # reported below, with the count
            errors.append(exc)

    workers = [threading.Thread(target=increment) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    with database.transaction() as tx:
        assert (errors, tx.execute("SELECT n FROM counter").fetchone()) == ([], (threads * rounds,))
    assert _pool_state(database)[1] == 0 and _pool_state(database)[0] <= 2
    database.dispose()


@pytest.mark.parametrize("target", [":memory:", "sqlite://", "sqlite:///:memory:"])
def test_a_memory_database_is_one_connection_shared_by_threads(target: str) -> None:
    database = Database(target)
    with database.transaction(write=True) as tx:
        tx.execute("CREATE TABLE t (v TEXT)")

    def write() -> None:
        with database.transaction(write=True) as tx:
            tx.execute("INSERT INTO t VALUES ('from a thread')")

    worker = threading.Thread(target=write)
    worker.start()
    worker.join(timeout=30)
    with database.transaction() as tx:
        assert tx.execute("SELECT v FROM t").fetchall() == [("from a thread",)]
    database.dispose()


def test_disposing_a_memory_database_closes_its_connection_and_a_new_one_starts_empty() -> None:
    database = Database(":memory:")
    with database.transaction(write=True) as tx:
        tx.execute("CREATE TABLE t (v TEXT)")
        conn = tx.driver_connection
    database.dispose()
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        conn.execute("SELECT 1")
    with database.transaction() as tx:  # a fresh connection: a fresh, empty database
        assert tx.execute("SELECT name FROM sqlite_master").fetchall() == []
    database.dispose()


@pytest.mark.parametrize(("size", "overflow"), [(0, 0), (0, 5), (1, -1), (5, -1)])
def test_a_pool_needs_one_kept_connection_and_no_negative_overflow(tmp_path: Path, size: int, overflow: int) -> None:
    with pytest.raises(ValueError, match="size must be at least 1 and overflow at least 0"):
        ConnectionPool(lambda: connect(str(tmp_path / "x.db")), size=size, overflow=overflow)


async def test_checkpoint_store_on_memory_database_from_worker_threads() -> None:
    from saber.graph.checkpoint import SQLiteCheckpointStore

    store = SQLiteCheckpointStore(":memory:")
    try:
        assert await asyncio.gather(store.list_tasks(), store.list_tasks()) == [[], []]
    finally:
        await store.close()


# -- targets -------------------------------------------------------------------------------------


def test_sqlite_targets_are_read_without_sqlalchemy_and_as_it_reads_them(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    absolute = str(tmp_path / "a.db")
    assert sqlite_path(absolute) == sqlite_path(f"sqlite:///{absolute}") == absolute
    assert sqlite_path("rel.db") == sqlite_path("sqlite:///rel.db") == str(tmp_path / "rel.db")
    assert sqlite_path("~/x.db") == str(Path("~/x.db").expanduser())
    assert sqlite_path("postgresql://u:p@h/db") is None and sqlite_path("postgres://h/db") is None
    assert engine_url(absolute).database == absolute
    assert engine_url("postgres://u:p@h/db").drivername == "postgresql+psycopg"
    with pytest.raises(DatabaseError, match=r"unsupported database URL 'mysql://me:\*\*\*@host/db' \(scheme 'mysql'\)"):
        sqlite_path("mysql://me:pw@host/db")
    with pytest.raises(DatabaseError, match="unsupported SQLite URL"):
        sqlite_path("sqlite:///a.db?mode=ro")
    assert mask_url("postgresql://me:topsecret@h/db") == "postgresql://me:***@h/db"


def test_a_path_and_its_sqlite_url_open_one_database(tmp_path: Path) -> None:
    path = tmp_path / "saber.db"
    by_path = open_database(path)
    by_url = open_database(f"sqlite:///{path}")
    try:
        assert by_url is by_path
    finally:
        by_url.close()
        by_path.close()


# -- migrations on the pool's connections ------------------------------------------------------


def test_an_old_revision_is_migrated_and_every_pooled_connection_sees_the_new_schema(tmp_path: Path) -> None:
    from alembic import command

    path = tmp_path / "saber.db"
    db = Database(path, pool_size=2)
    with migrate._connection(db, write=True) as conn:
        command.upgrade(migrate._config(conn), "0004")
    assert migrate.current(db) == "0004"
    with db.transaction() as a, db.transaction() as b:  # two pooled connections, statements cached on each
        assert a.conn is not b.conn
        for tx in (a, b):
            assert tx.execute("SELECT COUNT(*) FROM mem_memories").fetchone() == (0,)
            with pytest.raises(sqlite3.OperationalError, match="no such table"):
                tx.execute("SELECT COUNT(*) FROM rag_chunk_removals")
    assert migrate.upgrade(db) == migrate.head()
    with db.transaction() as a, db.transaction() as b:
        for tx in (a, b):
            assert tx.execute("SELECT COUNT(*) FROM mem_memories").fetchone() == (0,)
            assert tx.execute("SELECT COUNT(*) FROM rag_chunk_removals").fetchone() == (0,)  # made by 0005
    assert _pool_state(db) == (2, 0)
    db.dispose()
    reopened = open_database(path)  # at the newest revision: opened without a migration
    try:
        assert migrate.current(reopened) == migrate.head()
    finally:
        reopened.close()


def test_a_memory_database_is_migrated_on_its_one_connection() -> None:
    db = open_database(":memory:")
    try:
        assert migrate.current(db) == migrate.head()
        with db.transaction() as tx:
            assert tx.execute("SELECT COUNT(*) FROM mem_memories").fetchone() == (0,)
    finally:
        db.close()
