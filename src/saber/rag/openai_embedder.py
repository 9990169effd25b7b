"""Embeddings from any OpenAI-compatible ``/embeddings`` endpoint (OpenAI, DashScope, Ollama, vLLM...).

Every failure is one ``EmbeddingError`` line naming the embedder and its endpoint (``embedder
openai:MODEL at URL …``), shown as it is by the API, the CLI and the web page: the URL is shown
without credentials or query string, and the API key never appears (an endpoint that echoes it
back has it masked).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import numpy as np

from saber.llm.endpoint_errors import connection_reason, error_message, one_line
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
        self._api_key = api_key
        self.timeout = timeout
        self.endpoint = _display_url(f"{self.base_url}/embeddings")
        """Where the embeddings are asked for, as errors show it (no credentials, no query string)."""
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers, transport=transport)

    @property
    def dim(self) -> int:
        if self._dim is None:
            try:
                self._dim = int(self._request(["dimension probe"]).shape[1])
            except EmbeddingError as exc:
                raise EmbeddingError(f"{exc} (asking its vector size; set embedding_dim to store documents "
                                     "keyword-searchable while the endpoint is down)", retryable=exc.retryable) from None
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
        where = f"embedder {self.name} at {self.endpoint}"
        try:
            response = self._client.post(url, json={"model": self.model, "input": batch, "encoding_format": "float"})
        except httpx.TimeoutException:
            raise EmbeddingError(f"{where} timed out after {self.timeout:g} s", retryable=True) from None
        except httpx.HTTPError as exc:
            raise EmbeddingError(f"{where} unreachable: {self._hide(connection_reason(exc))}", retryable=True) from None
        if response.status_code >= 400:
            status = response.status_code
            hint = " (check embedding.api_key)" if status in (401, 403) else ""
            raise EmbeddingError(f"{where} answered {status}: {self._hide(_detail(response))}{hint}",
                                 retryable=status == 429 or status >= 500)
        try:
            body: Any = response.json()
            items = sorted(body["data"], key=lambda d: d.get("index", 0))
            matrix = np.asarray([item["embedding"] for item in items], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError(f"{where} sent an unexpected body: {self._hide(str(exc))}") from None
        if matrix.ndim != 2 or matrix.shape[0] != len(batch):
            raise EmbeddingError(f"{where} returned {matrix.shape[0] if matrix.ndim else 0} vectors for {len(batch)} inputs")
        if self._dim is not None and matrix.shape[1] != self._dim:
            raise EmbeddingError(f"{where} returned {matrix.shape[1]} dimensions, expected {self._dim}")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32)

    def _hide(self, text: str) -> str:
        """``text`` with the API key masked (some endpoints echo a refused key back)."""
        return text.replace(self._api_key, "***") if self._api_key else text

    def close(self) -> None:
        self._client.close()


def _display_url(url: str) -> str:
    """``url`` without user, password or query string (either may hold a credential)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _detail(response: httpx.Response) -> str:
    """The human part of an error answer (see ``error_message``), else its text or status phrase."""
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    return error_message(body) or one_line(response.text) or response.reason_phrase
