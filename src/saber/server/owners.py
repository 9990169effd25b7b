"""Which user uploaded which knowledge-base document, so each user lists and deletes only their own.

The knowledge base itself is one per server (the agent's ``rag_search`` reads all of it); this
small table beside it (``server.db`` under SABER_HOME) scopes the document API per user.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path


class DocumentOwners:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS document_owners (document_id TEXT NOT NULL, user_id TEXT NOT NULL,"
                         " PRIMARY KEY (document_id, user_id))")
        self._lock = threading.Lock()

    def _run(self, sql: str, args: tuple[str, ...]) -> list[tuple[str, ...]]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    async def add(self, document_id: str, user_id: str) -> None:
        await asyncio.to_thread(self._run, "INSERT OR IGNORE INTO document_owners VALUES (?, ?)", (document_id, user_id))

    async def owned(self, user_id: str) -> set[str]:
        rows = await asyncio.to_thread(self._run, "SELECT document_id FROM document_owners WHERE user_id = ?", (user_id,))
        return {r[0] for r in rows}

    async def owns(self, document_id: str, user_id: str) -> bool:
        rows = await asyncio.to_thread(self._run, "SELECT 1 FROM document_owners WHERE document_id = ? AND user_id = ?",
                                       (document_id, user_id))
        return bool(rows)

    async def release(self, document_id: str, user_id: str) -> bool:
        """Drop this user's claim; True when nobody else holds the document (it may be deleted)."""
        await asyncio.to_thread(self._run, "DELETE FROM document_owners WHERE document_id = ? AND user_id = ?",
                                (document_id, user_id))
        rows = await asyncio.to_thread(self._run, "SELECT 1 FROM document_owners WHERE document_id = ?", (document_id,))
        return not rows

    def close(self) -> None:
        with self._lock:
            self._db.close()
