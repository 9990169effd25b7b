"""saber.db on SQLite: one pool per database per process, transactions, durability, errors,
and store calls kept off the event loop."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from saber.agent.memory.sqlite_store import SQLiteMemoryStore
from saber.agent.memory.store import MemoryStoreError
from saber.cli import main
from saber.config import Settings
from saber.db import DatabaseError, head, open_database
from saber.db import database as database_module
from saber.graph.checkpoint import SQLiteCheckpointStore
from saber.graph.node import Node
from saber.rag.store import open_store


def test_every_store_on_one_file_shares_one_database_and_its_pool(tmp_path: Path) -> None:
    path = tmp_path / "saber.db"
    knowledge = open_store(None, str(path), pool_size=3)
    memory = SQLiteMemoryStore(path)
    try:
        assert memory._db is knowledge._db  # type: ignore[attr-defined]
        assert knowledge._db.engine.pool.size() == 3  # type: ignore[attr-defined]  # the first opener's size
    finally:
        memory.close()
        knowledge.close()
    fresh = open_database(path, pool_size=2)  # the last close disposed it: a new one, a new size
    try:
        assert fresh.engine.pool.size() == 2  # type: ignore[attr-defined]
    finally:
        fresh.close()


def test_pool_size_comes_from_the_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SABER_DATABASE_POOL_SIZE", "7")
    settings = Settings(home=tmp_path)
    assert settings.database.pool_size == 7
    store = SQLiteCheckpointStore(settings.sqlite_path, pool_size=settings.database.pool_size)

    async def pool_size() -> int:
        await store.list_tasks()
        assert store._db is not None
        size = store._db.engine.pool.size()  # type: ignore[attr-defined]
        await store.close()
        return int(size)

    assert asyncio.run(pool_size()) == 7
    monkeypatch.setenv("SABER_DATABASE_POOL_SIZE", "0")
    with pytest.raises(ValueError, match=r"database\.pool_size"):
        Settings(home=tmp_path)


def test_a_failed_transaction_leaves_nothing(tmp_path: Path) -> None:
    db = open_database(tmp_path / "saber.db")
    try:
        with pytest.raises(RuntimeError), db.transaction(write=True) as tx:
            tx.execute("INSERT INTO mem_preferences (user_id, key, value, updated_at) VALUES (?, ?, ?, ?)",
                       ("u", "k", "v", 1.0))
            raise RuntimeError("boom")
        with db.transaction() as tx:
            assert tx.execute("SELECT COUNT(*) FROM mem_preferences").fetchone() == (0,)
    finally:
        db.close()


def test_durable_writes_commit_with_synchronous_full(tmp_path: Path) -> None:
    db = open_database(tmp_path / "saber.db", pool_size=1)
    try:
        with db.transaction(write=True, durable=True) as tx:
            assert tx.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL
        with db.transaction(write=True) as tx:  # the same pooled connection, back to NORMAL
            assert tx.execute("PRAGMA synchronous").fetchone() == (1,)
            assert tx.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    finally:
        db.close()


def test_bad_targets_raise_a_clear_error(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database" * 100)
    with pytest.raises(DatabaseError, match=r"junk\.db: file is not a database"):
        open_database(junk)
    with pytest.raises(DatabaseError, match=r"unsupported database URL 'mysql://me:\*\*\*@host/db' \(scheme 'mysql'\)"):
        open_database("mysql://me:pw@host/db")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(DatabaseError, match="cannot create the database"):
        open_database(blocker / "saber.db")
    with pytest.raises(DatabaseError) as info:
        open_database("postgresql://me:topsecret@127.0.0.1:1/nothing", connect_timeout=2)
    assert "cannot connect" in str(info.value) and "topsecret" not in str(info.value)


async def test_checkpoint_calls_never_run_sql_on_the_event_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    threads: set[int] = set()

    def traced(conn: Any, record: Any) -> None:  # every statement on every pooled connection, in the thread that ran it
        pragmas(conn, record)
        conn.set_trace_callback(lambda _sql: threads.add(threading.get_ident()))

    pragmas = database_module._sqlite_pragmas
    monkeypatch.setattr(database_module, "_sqlite_pragmas", traced)
    store = SQLiteCheckpointStore(tmp_path / "saber.db")
    try:
        await store.list_tasks()
        assert store._db is not None
        await store.save_graph("t1", [Node(id="n1", tool="x")], config={}, status="running")
        await store.save_nodes("t1", [Node(id="n1", tool="x")])
        assert (await store.load("t1")) is not None
        await store.set_status("t1", "done")
        await store.delete("t1")
    finally:
        await store.close()
    assert threads and threading.get_ident() not in threads


def test_cli_upgrades_and_reports_the_revision(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "saber.db"
    main(["db", "current", "--url", str(path)])
    assert "revision none, pending migrations" in capsys.readouterr().out
    main(["db", "upgrade", "--url", str(path)])
    assert f"schema at revision {head()}" in capsys.readouterr().out
    main(["db", "current", "--url", str(path)])
    assert "up to date" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        main(["db", "upgrade", "--url", "postgresql://me:topsecret@127.0.0.1:1/x"])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert "cannot connect" in err and "topsecret" not in err


def test_a_database_migrated_by_a_newer_saber_is_refused_by_name(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "saber.db"
    open_database(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE saber_schema_version SET version_num = '0099'")
    with pytest.raises(DatabaseError, match="schema revision 0099, which this version of Saber does not know"):
        open_database(path)
    with pytest.raises(MemoryStoreError, match="upgrade Saber"):
        SQLiteMemoryStore(path)
