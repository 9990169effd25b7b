"""Build the knowledge base from Settings: the store and the embedder they name."""

from __future__ import annotations

from saber.config import Settings
from saber.rag.embedder import Embedder, LocalE5Embedder
from saber.rag.engine import RagEngine
from saber.rag.store import open_store


def embedder_from_settings(settings: Settings) -> Embedder:
    if settings.embedding_provider == "openai":
        from saber.rag.openai_embedder import OpenAIEmbedder

        if not settings.embedding_base_url:
            raise ValueError("embedding_provider is 'openai' but embedding_base_url is not set")
        key = settings.embedding_api_key.get_secret_value() if settings.embedding_api_key else None
        return OpenAIEmbedder(base_url=settings.embedding_base_url, model=settings.embedding_model, api_key=key)
    return LocalE5Embedder()


def engine_from_settings(settings: Settings | None = None) -> RagEngine:
    """SQLite at ``$SABER_HOME/saber.db`` unless ``database_url`` names PostgreSQL."""
    s = settings or Settings.load()
    store = open_store(s.database_url, str(s.sqlite_path))
    return RagEngine(store, embedder_from_settings(s), max_file_mb=s.rag_max_file_mb)
