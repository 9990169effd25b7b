"""``PostgresMemoryStore``: the same tables in PostgreSQL (psycopg 3), for several server processes.

Vectors are stored as ``bytea`` (float32) and compared in numpy: a user's memories are few, so a
brute-force cosine is exact and needs no extension. Connections come from the process's pool for
this database (``saber.db``), checked before use: a dropped one is replaced on the next call.
"""

from __future__ import annotations

from saber.agent.memory._sql import SQLMemoryStore


class PostgresMemoryStore(SQLMemoryStore):
    """The memory store in PostgreSQL (needs the ``postgres`` extra)."""

    def __init__(self, url: str, *, connect_timeout: float = 10.0, pool_size: int | None = None) -> None:
        self.url = url
        super().__init__(url, pool_size=pool_size, connect_timeout=connect_timeout)
