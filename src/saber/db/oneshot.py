"""One-shot commands: a process that runs one command and exits keeps no connection pool.

``saber ask``, ``saber docs`` and the like open the SQLite file, run a few transactions and exit:
a pool has nothing to reuse there, and SQLAlchemy, which brings it, cost such a command more CPU
than everything else it does with the database (importing it: 115–170 ms of a time query's
550 ms). Inside ``with one_shot():`` a SQLite file is opened without a pool (a connection per
transaction, the same settings) and without loading SQLAlchemy; servers and workers, and
everything outside the block, get the engine's pool. PostgreSQL and ``:memory:`` are pooled
either way."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

_ONE_SHOT: ContextVar[bool] = ContextVar("saber_db_one_shot", default=False)


@contextlib.contextmanager
def one_shot(enabled: bool = True) -> Iterator[None]:
    """SQLite files opened inside the block (in this context: its tasks and worker threads
    included) get no pool."""
    token = _ONE_SHOT.set(enabled)
    try:
        yield
    finally:
        _ONE_SHOT.reset(token)


def in_one_shot() -> bool:
    return _ONE_SHOT.get()
