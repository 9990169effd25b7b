"""The knowledge base: documents, chunks, embeddings, hybrid retrieval, and its tools."""

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
