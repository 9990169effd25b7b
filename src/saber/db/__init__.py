"""The one storage layer: a SQLAlchemy engine (and its connection pool) per database per process,
transactions, dialect differences and versioned migrations, shared by the knowledge base, memory,
checkpoints and approvals. Its names load their modules on first use (``saber --help`` loads
none); SQLAlchemy is loaded when a database is first opened, Alembic only to migrate one."""

from typing import TYPE_CHECKING

from saber._lazy import lazy_exports

if TYPE_CHECKING:
    from saber.db.database import DEFAULT_POOL_SIZE, Database, DatabaseError, Tx, mask_url, open_database
    from saber.db.migrate import current, head, upgrade
    from saber.db.oneshot import one_shot

__all__ = [
    "DEFAULT_POOL_SIZE", "Database", "DatabaseError", "Tx", "current", "head", "mask_url", "one_shot", "open_database",
    "upgrade",
]

_HOMES = {
    "DEFAULT_POOL_SIZE": "saber.db.database", "Database": "saber.db.database", "DatabaseError": "saber.db.database",
    "Tx": "saber.db.database", "mask_url": "saber.db.database", "open_database": "saber.db.database",
    "one_shot": "saber.db.oneshot", "current": "saber.db.migrate", "head": "saber.db.migrate", "upgrade": "saber.db.migrate",
}


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__)
