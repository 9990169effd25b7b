"""Document owners kept by earlier versions in the API node's own ``server.db``: moved into the
knowledge base's ``rag_owners`` table at start (where every API node and worker sees them), once."""

from __future__ import annotations

import logging
from pathlib import Path

from saber.db.database import Database
from saber.rag.engine import RagEngine

log = logging.getLogger(__name__)


def move_legacy_owners(path: Path, engine: RagEngine) -> int:
    """Copy the ``document_owners`` rows of ``path`` (if any) into the knowledge base, then drop that
    table; returns how many rows were moved. Run off the event loop."""
    if not path.is_file():
        return 0
    legacy = Database(path, pooled=False)  # read once: no pool, and no migration (not Saber's schema)
    try:
        with legacy.transaction() as tx:
            if tx.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'document_owners'").fetchone() \
                    is None:
                return 0
            rows = tx.execute("SELECT document_id, user_id FROM document_owners").fetchall()
        known = {d.id for d in engine.list_documents(hidden=())}
        for document_id, user_id in rows:
            if document_id in known:
                engine.add_owner(str(document_id), str(user_id))
        with legacy.transaction(write=True) as tx:
            tx.execute("DROP TABLE document_owners")
    finally:
        legacy.dispose()
    log.info("moved %d document owner(s) from %s into the knowledge base", len(rows), path)
    return len(rows)
