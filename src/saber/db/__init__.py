"""The one storage layer: connections, a pool per database per process, transactions, dialect
differences and versioned migrations, shared by the knowledge base, memory, checkpoints and
approvals. Its names load their modules on first use (``saber --help`` loads none); SQLAlchemy
is loaded only for PostgreSQL and for migrations, never to use a SQLite file already migrated."""

from typing import Any

__all__ = [
    "DEFAULT_POOL_SIZE", "Database", "DatabaseError", "Tx", "current", "head", "mask_url", "open_database", "upgrade",
]

_HOMES = {
    "DEFAULT_POOL_SIZE": "saber.db.database", "Database": "saber.db.database", "DatabaseError": "saber.db.database",
    "Tx": "saber.db.database", "mask_url": "saber.db.database", "open_database": "saber.db.database",
    "current": "saber.db.migrate", "head": "saber.db.migrate", "upgrade": "saber.db.migrate",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(home), name)
