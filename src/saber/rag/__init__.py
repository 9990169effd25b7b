"""The knowledge base: documents, chunks, embeddings, hybrid retrieval."""
