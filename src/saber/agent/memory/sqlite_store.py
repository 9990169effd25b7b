"""``SQLiteMemoryStore``: memory in the embedded ``saber.db`` (tables ``mem_*``), the default.

The whole app shares one file and, within a process, one pool of connections to it
(``saber.db``): WAL mode, a busy timeout, and every write a short ``BEGIN IMMEDIATE``
transaction. The tables come from ``saber.db``'s migrations.
"""

from __future__ import annotations

from pathlib import Path

from saber.agent.memory._sql import SQLMemoryStore


class SQLiteMemoryStore(SQLMemoryStore):
    """The memory store in a SQLite file (the default: ``saber.db`` under ``SABER_HOME``)."""

    def __init__(self, path: str | Path, *, pool_size: int | None = None) -> None:
        self.path = Path(path).expanduser()
        super().__init__(str(self.path), pool_size=pool_size)
