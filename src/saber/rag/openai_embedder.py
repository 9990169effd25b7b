"""Embeddings from any OpenAI-compatible ``/embeddings`` endpoint (OpenAI, DashScope, Ollama, vLLM...)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from saber.rag.documents import EmbeddingError
from saber.rag.embedder import Vectors


class OpenAIEmbedder:
    """Batched calls to ``{base_url}/embeddings``; rows are L2-normalised on arrival.

    ``dim`` is asked of the endpoint with one probe call when not given.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        dim: int | None = None,
        batch_size: int = 64,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = f"openai:{model}"
        self.batch_size = batch_size
        self._dim = dim
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers, transport=transport)

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self._request(["dimension probe"]).shape[1])
        return self._dim

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [self._request(list(texts[i:i + self.batch_size])) for i in range(0, len(texts), self.batch_size)]
        return np.concatenate(parts, axis=0)

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self._request([text])[0]
        return vector

    def _request(self, batch: list[str]) -> Vectors:
        url = f"{self.base_url}/embeddings"
        try:
            response = self._client.post(url, json={"model": self.model, "input": batch, "encoding_format": "float"})
        except httpx.HTTPError as exc:
            raise EmbeddingError(f"embeddings endpoint {url} unreachable: {exc}", retryable=True) from None
        if response.status_code >= 400:
            raise EmbeddingError(f"embeddings endpoint {url} answered {response.status_code}: {response.text[:300]}",
                                 retryable=response.status_code == 429 or response.status_code >= 500)
        try:
            body: Any = response.json()
            items = sorted(body["data"], key=lambda d: d.get("index", 0))
            matrix = np.asarray([item["embedding"] for item in items], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError(f"embeddings endpoint {url} sent an unexpected body: {exc}") from None
        if matrix.ndim != 2 or matrix.shape[0] != len(batch):
            raise EmbeddingError(f"embeddings endpoint {url} returned {matrix.shape[0] if matrix.ndim else 0} vectors for {len(batch)} inputs")
        if self._dim is not None and matrix.shape[1] != self._dim:
            raise EmbeddingError(f"embeddings endpoint {url} returned {matrix.shape[1]} dimensions, expected {self._dim}")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32)

    def close(self) -> None:
        self._client.close()
