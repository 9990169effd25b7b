"""The one storage layer: connections, a pool per database per process, transactions, dialect
differences and versioned migrations, shared by the knowledge base, memory and checkpoints."""

from saber.db.database import DEFAULT_POOL_SIZE, Database, DatabaseError, Tx, mask_url, open_database
from saber.db.migrate import current, head, upgrade

__all__ = [
    "DEFAULT_POOL_SIZE", "Database", "DatabaseError", "Tx", "current", "head", "mask_url", "open_database", "upgrade",
]
