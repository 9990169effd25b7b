"""Build the knowledge base from Settings: the store and the embedder they name."""

from __future__ import annotations

from saber.config import Settings
from saber.rag.chunking import ChunkingConfig
from saber.rag.embedder import Embedder, LocalE5Embedder
from saber.rag.engine import RagEngine
from saber.rag.store import open_store


def embedder_from_settings(settings: Settings) -> Embedder:
    """The embedder ``settings`` ask for: the bundled local E5 model, or an OpenAI-compatible endpoint."""
    if settings.embedding_provider == "openai":
        from saber.rag.openai_embedder import OpenAIEmbedder

        if not settings.embedding_base_url:
            raise ValueError("embedding_provider is 'openai' but embedding_base_url is not set")
        key = settings.embedding_api_key.get_secret_value() if settings.embedding_api_key else None
        return OpenAIEmbedder(base_url=settings.embedding_base_url, model=settings.embedding_model, api_key=key,
                              dim=settings.embedding_dim, batch_size=settings.embedding_batch_size,
                              timeout=settings.llm_timeout)
    return LocalE5Embedder()


def engine_from_settings(settings: Settings | None = None) -> RagEngine:
    """SQLite at ``$SABER_HOME/saber.db`` unless ``database_url`` names PostgreSQL."""
    s = settings or Settings.load()
    store = open_store(s.database_url, str(s.sqlite_path), pool_size=s.db_pool_size)
    chunking = ChunkingConfig(child_size=s.rag_child_size, child_overlap=s.rag_child_overlap,
                              parent_size=s.rag_parent_size, parent_overlap=s.rag_parent_overlap)
    return RagEngine(store, embedder_from_settings(s), chunking=chunking, max_file_mb=s.rag_max_file_mb)
