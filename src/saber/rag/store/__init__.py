"""Knowledge-base stores: embedded SQLite (default) and PostgreSQL with pgvector."""

from saber.rag.store.base import KnowledgeStore
from saber.rag.store.sqlite import SQLiteStore

__all__ = ["KnowledgeStore", "SQLiteStore", "open_store"]


def open_store(database_url: str | None, sqlite_path: str | None = None, *, pool_size: int | None = None) -> KnowledgeStore:
    """PostgreSQL when ``database_url`` is a postgres URL, else the SQLite file at ``sqlite_path``
    (on the process's shared pool for that database, ``pool_size`` connections when it opens it)."""
    if database_url:
        from saber.config.database_url import postgres_url_problem

        if problem := postgres_url_problem(database_url):
            raise ValueError(problem)
        from saber.rag.store.postgres import PostgresStore

        return PostgresStore(database_url, pool_size=pool_size)
    if not sqlite_path:
        raise ValueError("open_store: give a database URL or a SQLite path")
    return SQLiteStore(sqlite_path, pool_size=pool_size)
