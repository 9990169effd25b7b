"""SQLite on SQLAlchemy's engine and pool: no Alembic once a file is migrated, the pool (bursts, a
full pool, connections always returned), concurrent writers, targets and URLs, and migrations
that every pooled connection sees."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from saber.db import migrate
from saber.db.database import (
    Database,
    DatabaseError,
    PoolTimeout,
    engine_url,
    mask_url,
    open_database,
    sqlite_path,
)

NO_ALEMBIC = """
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
print(sorted({m.split(".")[0] for m in sys.modules if m.split(".")[0] in ("sqlalchemy", "alembic")}))
"""


def test_a_migrated_sqlite_database_is_used_without_importing_alembic(tmp_path: Path) -> None:
    path = tmp_path / "saber.db"
    open_database(path).close()  # migrated (with Alembic) in this process
    done = subprocess.run([sys.executable, "-c", NO_ALEMBIC, str(path)], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.strip() == "['sqlalchemy']"


ONE_SHOT = """
import sys, threading
from saber.db import one_shot, open_database
with one_shot():
    db = open_database(sys.argv[1])
    assert not db.pooled
    with db.transaction(write=True) as tx:
        tx.execute("CREATE TABLE IF NOT EXISTS counter (n INTEGER NOT NULL)")
        tx.execute("INSERT INTO counter VALUES (0)")
        first = tx.driver_connection
    with db.transaction() as tx:
        assert tx.driver_connection is not first  # a connection per transaction: nothing kept
        assert tx.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert tx.execute("PRAGMA busy_timeout").fetchone() == (10000,)

    def increment():
        for _ in range(25):
            with db.transaction(write=True) as tx:
                n = tx.execute("SELECT n FROM counter").fetchone()[0]
                tx.execute("UPDATE counter SET n = ?", (n + 1,))

    workers = [threading.Thread(target=increment) for _ in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    with db.transaction() as tx:
        print(tx.execute("SELECT n FROM counter").fetchone()[0])
    db.close()
print(sorted({m.split(".")[0] for m in sys.modules if m.split(".")[0] in ("sqlalchemy", "alembic")}))
outside = open_database(sys.argv[1])
print(outside.pooled)
outside.close()
"""


def test_a_one_shot_command_keeps_no_pool_loads_no_sqlalchemy_and_loses_no_update(tmp_path: Path) -> None:
    path = tmp_path / "saber.db"
    open_database(path).close()  # migrated in this process
    done = subprocess.run([sys.executable, "-c", ONE_SHOT, str(path)], capture_output=True, text=True,
                          check=True, timeout=120)
    assert done.stdout.split("\n")[:3] == ["200", "[]", "True"]  # 8 threads x 25; outside the block: pooled


def test_a_one_shot_database_is_migrated_on_an_engine_made_for_it(tmp_path: Path) -> None:
    from saber.db import one_shot

    with one_shot():
        db = open_database(tmp_path / "fresh.db")  # not migrated yet: Alembic needs the engine
    try:
        assert not db.pooled and migrate.current(db) == migrate.head()
        with db.transaction() as tx:
            assert tx.execute("SELECT COUNT(*) FROM mem_history").fetchone() == (0,)
    finally:
        db.close()


def test_serve_worker_and_mcp_keep_a_pool_every_other_command_is_one_shot() -> None:
    from saber.cli.main import LONG_LIVED, _command

    assert {_command(a) for a in (["serve", "--port", "1"], ["worker"], ["mcp", "serve"])} <= LONG_LIVED
    assert _command(["--json", "ask", "x"]) == "ask" and "ask" not in LONG_LIVED


# -- the engine's pool ---------------------------------------------------------------------------


def _closed(conn: sqlite3.Connection) -> bool:
    try:
        conn.execute("SELECT 1")
    except sqlite3.ProgrammingError:
        return True
    return False


def _hold(db: Database, n: int) -> tuple[list[sqlite3.Connection], threading.Event, list[threading.Thread]]:
    """``n`` threads each holding a transaction (so a pooled connection) until the event is set."""
    got: list[sqlite3.Connection] = []
    ready, release = threading.Barrier(n + 1), threading.Event()

    def hold() -> None:
        with db.transaction() as tx:
            got.append(tx.driver_connection)
            ready.wait(timeout=30)
            release.wait(timeout=30)

    threads = [threading.Thread(target=hold) for _ in range(n)]
    for thread in threads:
        thread.start()
    ready.wait(timeout=30)
    return got, release, threads


def test_a_burst_opens_overflow_connections_and_closes_them_when_they_come_back(tmp_path: Path) -> None:
    db = Database(tmp_path / "pool.db", pool_size=2)  # database.pool_size 2: 2 kept, 2 more for a burst
    conns, release, threads = _hold(db, 4)
    assert len({id(c) for c in conns}) == 4 and db.engine.pool.checkedout() == 4
    release.set()
    for thread in threads:
        thread.join(timeout=30)
    assert db.engine.pool.checkedout() == 0
    assert sorted(_closed(c) for c in conns) == [False, False, True, True]  # the burst's extra ones closed
    with db.transaction() as tx:
        assert tx.driver_connection in [c for c in conns if not _closed(c)]  # kept ones are reused
    db.dispose()


def test_a_full_pool_waits_for_a_connection_then_raises_a_clear_error(tmp_path: Path) -> None:
    db = Database(tmp_path / "pool.db", pool_size=1, pool_timeout=0.05)
    conns, release, threads = _hold(db, 2)
    with pytest.raises(PoolTimeout, match=r"pool\.db came free in 0\.05 s: all 2 are in use \(database\.pool_size 1"), \
            db.transaction():
        pass
    release.set()
    for thread in threads:
        thread.join(timeout=30)
    with db.transaction() as tx:  # a returned connection is lent again
        assert tx.driver_connection in conns
    db.dispose()


def test_dispose_closes_idle_connections_and_the_database_stays_usable(tmp_path: Path) -> None:
    db = Database(tmp_path / "pool.db", pool_size=2)
    with db.transaction() as tx:
        idle = tx.driver_connection
    db.dispose()
    assert _closed(idle)
    with db.transaction() as tx:  # usable again, as a disposed SQLAlchemy engine is
        assert tx.execute("SELECT 1").fetchone() == (1,)
    db.dispose()


def test_every_pooled_connection_gets_the_pragmas(tmp_path: Path) -> None:
    db = Database(tmp_path / "pool.db", pool_size=2)
    conns, release, threads = _hold(db, 2)
    for conn in conns:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("PRAGMA busy_timeout").fetchone() == (10_000,)
        assert conn.execute("PRAGMA foreign_keys").fetchone() == (1,)
        assert conn.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
    release.set()
    for thread in threads:
        thread.join(timeout=30)
    db.dispose()


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
    """(connections open, connections lent out)."""
    pool = db.engine.pool
    return pool.checkedin() + pool.checkedout(), pool.checkedout()  # type: ignore[attr-defined]


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


@pytest.mark.parametrize("size", [0, -1])
def test_a_pool_needs_one_kept_connection(tmp_path: Path, size: int) -> None:
    with pytest.raises(ValueError, match="pool_size: must be at least 1"):
        Database(tmp_path / "x.db", pool_size=size)


async def test_checkpoint_store_on_memory_database_from_worker_threads() -> None:
    from saber.graph.checkpoint import SQLiteCheckpointStore

    store = SQLiteCheckpointStore(":memory:")
    try:
        assert await asyncio.gather(store.list_tasks(), store.list_tasks()) == [[], []]
    finally:
        await store.close()


# -- targets -------------------------------------------------------------------------------------


def test_sqlite_targets_are_read_as_sqlalchemy_reads_them(tmp_path: Path,
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
