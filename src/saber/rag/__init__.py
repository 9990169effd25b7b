"""The knowledge base: documents, chunks, embeddings, hybrid retrieval, and its tools.

Names are imported on first use (PEP 562), so ``saber.rag.cli`` can be imported by ``saber --help``
without loading numpy, jieba, the stores or the embedder.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from saber.rag.chunking import ChunkingConfig, Section, chunk_document
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
    from saber.rag.embedder import Embedder, HashingEmbedder, LocalE5Embedder
    from saber.rag.engine import RagEngine, Reranker
    from saber.rag.factory import embedder_from_settings, engine_from_settings
    from saber.rag.fusion import reciprocal_rank_fusion
    from saber.rag.keyword import BM25Index, tokenize
    from saber.rag.openai_embedder import OpenAIEmbedder
    from saber.rag.store import KnowledgeStore, SQLiteStore, open_store
    from saber.rag.tools import knowledge_tools

__all__ = [
    "BM25Index", "ChunkingConfig", "Document", "DocumentNotFound", "EmbeddingError", "Embedder", "EmptyDocument",
    "FileTooLarge", "HashingEmbedder", "Hit", "IngestResult", "KnowledgeStore", "LocalE5Embedder", "OpenAIEmbedder", "RagEngine",
    "RagError", "Reranker", "SQLiteStore", "Section", "UnsupportedFileType", "chunk_document",
    "embedder_from_settings", "engine_from_settings", "knowledge_tools", "open_store", "reciprocal_rank_fusion",
    "tokenize",
]

_HOMES = {
    "ChunkingConfig": "chunking", "Section": "chunking", "chunk_document": "chunking",
    "Document": "documents", "DocumentNotFound": "documents", "EmbeddingError": "documents",
    "EmptyDocument": "documents", "FileTooLarge": "documents", "Hit": "documents", "IngestResult": "documents",
    "RagError": "documents", "UnsupportedFileType": "documents",
    "Embedder": "embedder", "HashingEmbedder": "embedder", "LocalE5Embedder": "embedder",
    "RagEngine": "engine", "Reranker": "engine",
    "embedder_from_settings": "factory", "engine_from_settings": "factory",
    "reciprocal_rank_fusion": "fusion", "BM25Index": "keyword", "tokenize": "keyword",
    "OpenAIEmbedder": "openai_embedder",
    "KnowledgeStore": "store", "SQLiteStore": "store", "open_store": "store",
    "knowledge_tools": "tools",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'saber.rag' has no attribute {name!r}")
    value = getattr(import_module(f"saber.rag.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
