"""A process that ingests a document and is killed while embedding it (run by the resume test).

Usage: filler_script.py STORE  (a PostgreSQL URL, or a SQLite file). It prints ``embedding N``
when its filler holds a batch of N chunks, then never finishes it.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence

import numpy as np

from saber.rag import RagEngine, open_store

TEXT = "\n\n".join(f"Paragraph {i} is about the harbour crane number {i}." for i in range(40))


class HangingEmbedder:
    name = "hashing:64"
    dim = 64

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        print(f"embedding {len(texts)}", flush=True)
        threading.Event().wait()  # killed here
        raise AssertionError("unreachable")

    def embed_query(self, text: str) -> np.ndarray:
        raise AssertionError("not used")


def main() -> None:
    target = sys.argv[1]
    url = target if target.startswith("postgresql") else None
    engine = RagEngine(open_store(url, None if url else target), HangingEmbedder(), batch_size=4)
    engine.ingest_text("Cranes", TEXT, source="cranes.md")


if __name__ == "__main__":
    main()
