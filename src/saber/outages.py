"""A dependency that is down for a moment, and the one retry policy that waits it out.

"This run is broken" and "PostgreSQL (or Redis) is down" need different answers: the first is
failed with its reason, the second is waited out and the run goes on. ``dependency_down`` tells
them apart from the exception; ``retrying`` is the project's one retry loop for the second
(stamina: exponential backoff with jitter, bounded in wait and in total time), so every
reconnecting loop backs off the same way instead of each spinning at its own pace.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import stamina

_DRIVER_ERRORS: tuple[type[BaseException], ...] | None = None


def _driver_errors() -> tuple[type[BaseException], ...]:
    """The connection errors of the drivers that are installed (imported once, on first use)."""
    global _DRIVER_ERRORS
    if _DRIVER_ERRORS is None:
        found: list[type[BaseException]] = [OSError, ConnectionError, TimeoutError, sqlite3.OperationalError]
        try:
            from sqlalchemy import exc as sa

            found += [sa.OperationalError, sa.InterfaceError, sa.DisconnectionError, sa.TimeoutError]
        except ImportError:  # pragma: no cover - sqlalchemy is a base dependency
            pass
        try:
            import psycopg

            found += [psycopg.OperationalError, psycopg.InterfaceError]
        except ImportError:  # the postgres extra is not installed
            pass
        try:
            from redis import exceptions as rx

            found += [rx.ConnectionError, rx.TimeoutError, rx.BusyLoadingError, rx.ReadOnlyError]
        except ImportError:  # pragma: no cover - redis is a base dependency
            pass
        _DRIVER_ERRORS = tuple(found)
    return _DRIVER_ERRORS


def dependency_down(exc: BaseException) -> bool:
    """``exc`` says a database or Redis could not be reached (or dropped the connection), not that
    the request or the code is wrong. Follows ``__cause__`` (a store that wraps the driver's error)."""
    seen = 0
    current: BaseException | None = exc
    while current is not None and seen < 5:
        if isinstance(current, _driver_errors()):
            return True
        if getattr(current, "connection_invalidated", False):  # sqlalchemy's DBAPIError after a lost connection
            return True
        current, seen = current.__cause__ or current.__context__, seen + 1
    return False


def retrying(*, timeout: float | None, wait_initial: float = 0.2, wait_max: float = 5.0,
             on: Any = dependency_down) -> Any:
    """``async for attempt in retrying(timeout=...): with attempt: ...``: retries while ``on`` says
    the failure is an outage, backing off exponentially from ``wait_initial`` to ``wait_max``
    seconds with up to a second of jitter, for at most ``timeout`` seconds (None: until it works)."""
    return stamina.retry_context(on=on, attempts=None, timeout=timeout, wait_initial=wait_initial,
                                 wait_max=wait_max, wait_jitter=min(1.0, wait_max))


def backoff(attempt: int, *, initial: float = 0.5, maximum: float = 30.0) -> float:
    """The wait before try ``attempt`` (1-based): the project's one exponential curve, doubling
    from ``initial`` up to ``maximum``. A run handed back to the queue uses it as it is (the
    database clock spreads the tries); a node's retries, a model call's retries and the vector
    filler's next pass take it with their own settings and jitter; the reconnecting loops wait
    with stamina (``retrying``), the same curve with its jitter."""
    return min(maximum, initial * 2.0 ** max(0, attempt - 1))
