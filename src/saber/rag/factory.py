"""Build the knowledge base from Settings: the store and the embedder they name."""

from __future__ import annotations

from saber.config import Settings
from saber.rag.chunking import ChunkingConfig
from saber.rag.embedder import LOCAL_EMBEDDERS, Embedder, LocalE5Embedder
from saber.rag.engine import RagEngine
from saber.rag.limits import ReadLimits
from saber.rag.store import open_store


def embedder_from_settings(settings: Settings, recorded: str | None = None) -> Embedder:
    """The embedder ``settings`` ask for: a bundled model, or an OpenAI-compatible endpoint.
    ``recorded``: the embedder a knowledge base was indexed with, which ``auto`` keeps."""
    if settings.embedding.provider == "openai":
        from saber.rag.openai_embedder import OpenAIEmbedder

        if not settings.embedding.base_url:
            raise ValueError("embedding.provider is 'openai' but embedding.base_url is not set")
        key = settings.embedding.api_key.get_secret_value() if settings.embedding.api_key else None
        return OpenAIEmbedder(base_url=settings.embedding.base_url, model=settings.embedding.model, api_key=key,
                              dim=settings.embedding.dim, batch_size=settings.embedding.batch_size,
                              timeout=settings.llm.timeout)
    choice = settings.embedding.local_model
    if choice == "auto":
        choice = "multilingual-e5-small" if recorded == LocalE5Embedder.name else "use-multilingual-v3"
    return LOCAL_EMBEDDERS[choice]()


def engine_from_settings(settings: Settings | None = None) -> RagEngine:
    """SQLite at ``$SABER_HOME/saber.db`` unless ``database_url`` names PostgreSQL."""
    s = settings or Settings.load()
    store = open_store(s.database.url, str(s.sqlite_path), pool_size=s.database.pool_size)
    chunking = ChunkingConfig(child_size=s.rag.child_size, child_overlap=s.rag.child_overlap,
                              parent_size=s.rag.parent_size, parent_overlap=s.rag.parent_overlap)
    recorded = store.recorded_embedder() if s.embedding.provider == "local" else None
    return RagEngine(store, embedder_from_settings(s, recorded), chunking=chunking, max_file_mb=s.rag.max_file_mb,
                     read_limits=ReadLimits.from_mb(max_inflated_mb=s.rag.max_inflated_mb, max_ratio=s.rag.max_ratio,
                                                    max_text_chars=s.rag.max_text_chars))
