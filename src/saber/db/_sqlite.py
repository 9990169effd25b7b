"""SQLite connections for ``saber.db.database``, on the standard library's ``sqlite3``: opened with
Saber's settings and pooled per file. Nothing here imports SQLAlchemy (its import alone was a
large part of a CLI command's start)."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Protocol

BUSY_TIMEOUT_MS = 10_000
POOL_TIMEOUT = 30.0
"""Seconds a checkout waits for a connection when every one is in use (SQLAlchemy's default)."""

_PRAGMAS = (f"busy_timeout = {BUSY_TIMEOUT_MS}", "journal_mode = WAL", "synchronous = NORMAL", "foreign_keys = ON")


class PoolTimeout(Exception):
    """Every connection a pool may open stayed in use for the whole wait."""


def connect(database: str) -> sqlite3.Connection:
    """A connection to ``database`` (a file or ``:memory:``) that any thread may use, one at a time.

    Transactions are begun explicitly (BEGIN / BEGIN IMMEDIATE), never by the sqlite3 module."""
    conn = sqlite3.connect(database, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False, isolation_level=None)
    try:
        for pragma in _PRAGMAS:
            conn.execute(f"PRAGMA {pragma}")
    except BaseException:
        conn.close()
        raise
    return conn


def _close(conn: sqlite3.Connection) -> None:
    with contextlib.suppress(sqlite3.Error):
        conn.close()


class Pool(Protocol):
    def checkout(self) -> sqlite3.Connection: ...
    def checkin(self, conn: sqlite3.Connection, *, discard: bool = False) -> None: ...
    def dispose(self) -> None: ...


class ConnectionPool:
    """The connections one process keeps to one SQLite file, shared by its threads.

    ``size`` stay open between uses; while all are busy, up to ``overflow`` more are opened and
    closed again as they come back. With ``size + overflow`` in use, a checkout waits up to
    ``timeout`` seconds for one to be returned, then raises PoolTimeout (as SQLAlchemy's
    QueuePool does)."""

    def __init__(self, connect: Callable[[], sqlite3.Connection], *, size: int, overflow: int,
                 timeout: float = POOL_TIMEOUT, name: str = "") -> None:
        if size < 1 or overflow < 0:
            raise ValueError(f"pool: size must be at least 1 and overflow at least 0, got {size} and {overflow}")
        self.size = size
        self.overflow = overflow
        self.timeout = timeout
        self.name = name
        self._connect = connect
        self._idle: list[sqlite3.Connection] = []
        self._busy: set[sqlite3.Connection] = set()
        self._stale: set[sqlite3.Connection] = set()
        """Checked out when the pool was disposed: closed when they come back."""
        self._opening = 0
        self._changed = threading.Condition()

    @property
    def open_connections(self) -> int:
        with self._changed:
            return len(self._idle) + len(self._busy) + self._opening

    def checkout(self) -> sqlite3.Connection:
        deadline: float | None = None
        with self._changed:
            while not self._idle and len(self._busy) + self._opening >= self.size + self.overflow:
                if deadline is None:
                    deadline = time.monotonic() + self.timeout
                left = deadline - time.monotonic()
                if left <= 0:
                    raise PoolTimeout(
                        f"no connection to the database {self.name} came free in {self.timeout:g} s: all "
                        f"{self.size + self.overflow} are in use (database.pool_size {self.size}, as many again for bursts)"
                    )
                self._changed.wait(left)
            if self._idle:
                conn = self._idle.pop()  # the most recently used: the others may be closed as overflow
                self._busy.add(conn)
                return conn
            self._opening += 1
        try:
            conn = self._connect()
        except BaseException:
            with self._changed:
                self._opening -= 1
                self._changed.notify()
            raise
        with self._changed:
            self._opening -= 1
            self._busy.add(conn)
        return conn

    def checkin(self, conn: sqlite3.Connection, *, discard: bool = False) -> None:
        """Return ``conn``; ``discard`` closes it (its state is unknown) instead of keeping it."""
        with self._changed:
            self._busy.discard(conn)
            stale = conn in self._stale
            self._stale.discard(conn)
            keep = not (discard or stale) and len(self._idle) < self.size
            if keep:
                self._idle.append(conn)
            self._changed.notify()
        if not keep:
            _close(conn)

    def dispose(self) -> None:
        """Close the idle connections now, and the ones in use when they are returned."""
        with self._changed:
            idle, self._idle = self._idle, []
            self._stale |= self._busy
        for conn in idle:
            _close(conn)


class SharedConnection:
    """The one connection of a ``:memory:`` database (a second connection would see its own empty
    database): a thread holds it, under a re-entrant lock, from checkout to checkin."""

    def __init__(self, connect: Callable[[], sqlite3.Connection]) -> None:
        self._connect = connect
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None

    def checkout(self) -> sqlite3.Connection:
        self._lock.acquire()
        try:
            if self._conn is None:
                self._conn = self._connect()
            return self._conn
        except BaseException:
            self._lock.release()
            raise

    def checkin(self, conn: sqlite3.Connection, *, discard: bool = False) -> None:
        """Release it (kept even when ``discard``: closing it would drop the database)."""
        self._lock.release()

    def dispose(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            _close(conn)
