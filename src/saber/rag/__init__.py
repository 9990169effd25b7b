"""The knowledge base: documents, chunks, embeddings, hybrid retrieval, and its tools.

Names are imported on first use (PEP 562), so ``saber.cli.knowledge`` can be imported by ``saber --help``
without loading numpy, jieba, the stores or the embedder.
"""

from typing import TYPE_CHECKING

from saber._lazy import lazy_exports

if TYPE_CHECKING:
    from saber.rag.chunking import ChunkingConfig
    from saber.rag.documents import (
        Document,
        DocumentNotFound,
        EmbeddingError,
        EmptyDocument,
        FileTooLarge,
        Hit,
        IngestResult,
        RagError,
        UnsupportedFileType,
    )
    from saber.rag.embedder import Embedder, HashingEmbedder, LocalE5Embedder, LocalUSEEmbedder
    from saber.rag.engine import RagEngine, Reranker
    from saber.rag.factory import embedder_from_settings, engine_from_settings
    from saber.rag.openai_embedder import OpenAIEmbedder
    from saber.rag.store import KnowledgeStore, SQLiteStore, open_store
    from saber.rag.tools import knowledge_tools

__all__ = [
    "ChunkingConfig", "Document", "DocumentNotFound", "EmbeddingError", "Embedder", "EmptyDocument",
    "FileTooLarge", "HashingEmbedder", "Hit", "IngestResult", "KnowledgeStore", "LocalE5Embedder", "LocalUSEEmbedder",
    "OpenAIEmbedder",
    "RagEngine", "RagError", "Reranker", "SQLiteStore", "UnsupportedFileType", "embedder_from_settings",
    "engine_from_settings", "knowledge_tools", "open_store",
]
"""The public names. Chunking helpers are internal: import them from their modules (BM25 and fusion
live in ``saber.lexical``)."""

_HOMES = {
    "ChunkingConfig": "chunking",
    "Document": "documents", "DocumentNotFound": "documents", "EmbeddingError": "documents",
    "EmptyDocument": "documents", "FileTooLarge": "documents", "Hit": "documents", "IngestResult": "documents",
    "RagError": "documents", "UnsupportedFileType": "documents",
    "Embedder": "embedder", "HashingEmbedder": "embedder", "LocalE5Embedder": "embedder", "LocalUSEEmbedder": "embedder",
    "RagEngine": "engine", "Reranker": "engine",
    "embedder_from_settings": "factory", "engine_from_settings": "factory",
    "OpenAIEmbedder": "openai_embedder",
    "KnowledgeStore": "store", "SQLiteStore": "store", "open_store": "store",
    "knowledge_tools": "tools",
}


__getattr__, __dir__ = lazy_exports(__name__, {name: f"saber.rag.{home}" for name, home in _HOMES.items()}, __all__)
