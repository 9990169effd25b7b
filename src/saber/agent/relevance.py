"""Is anything in the knowledge base relevant to a query? A calibrated answer, for routing and rag.

A raw cosine similarity means little on its own: multilingual-e5 scores unrelated sentences around
0.8, other embedders elsewhere. So a passage's *relevance* is its cosine to the query minus the
query's baseline (the mean of its three highest similarities to neutral sentences: greetings,
thanks, small requests), and the *threshold* is calibrated for the configured embedder and the
documents actually stored: the mean plus three standard deviations of the relevance that off-topic
probe questions (in Chinese and English) reach against this knowledge base. It is recomputed when
the knowledge base changes; ``rag_min_relevance`` in the settings overrides it.
"""

from __future__ import annotations

import json
import logging
import statistics
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from saber.agent.router import KnowledgeEvidence

if TYPE_CHECKING:
    from saber.config import Settings
    from saber.rag.documents import Hit
    from saber.rag.engine import RagEngine

log = logging.getLogger(__name__)

NEUTRAL = (
    "hello", "thanks", "ok", "tell me something", "what time is it", "the weather today",
    "你好", "谢谢", "好的", "随便聊聊", "现在几点", "今天天气怎么样",
)
PROBES = (
    "What is the tallest mountain in Africa?", "How do I bake sourdough bread?", "Who won the football world cup in 1998?",
    "What is the speed of light?", "Give me tips for learning the guitar", "what's a good name for a cat",
    "写一首关于大海的诗", "中国最长的河流是哪条？", "怎么做红烧肉？", "介绍一下唐朝的历史", "如何提高睡眠质量？", "世界上人口最多的国家",
)
"""Off-topic questions: what an irrelevant query scores against this knowledge base."""
MIN_THRESHOLD = 0.02
PENDING_CANDIDATES = 3
"""While some chunks have no vector yet, how many keyword matches are embedded to score a query."""
FIXED_THRESHOLDS = {"hashing:": 0.05}
"""Embedders (by name prefix) whose scores calibration does not suit: feature hashing measures word
overlap only, so its probe scores are mostly exactly 0 plus the odd hash collision."""


class RelevanceGate:
    """Scores queries against one engine's knowledge base. Blocking (embeds): call it in a thread."""

    def __init__(self, engine: RagEngine, *, min_relevance: float | None = None, cache_path: Path | None = None) -> None:
        self.engine = engine
        self.min_relevance = min_relevance
        self.cache_path = cache_path
        """Where the calibration is kept between processes (a CLI run should not recalibrate)."""
        self._lock = threading.Lock()
        self._neutral: np.ndarray | None = None
        self._calibrated: tuple[int, float] | None = None

    def _baseline(self, query_vector: np.ndarray) -> float:
        with self._lock:
            if self._neutral is None:
                self._neutral = np.asarray(self.engine.embedder.embed_documents(list(NEUTRAL)), dtype=np.float32)
            neutral = self._neutral
        sims = np.sort(neutral @ query_vector)
        return float(sims[-3:].mean())

    def _best(self, query: str) -> tuple[float, str | None, np.ndarray]:
        """(relevance of the best chunk the request may see, its title, the query vector). Chunks
        still waiting for their vectors are found by keyword, and the best few embedded here: a
        document is relevant as soon as it is keyword-searchable."""
        vector = np.asarray(self.engine.embedder.embed_query(query), dtype=np.float32)
        best: tuple[float, str | None] = (float("-inf"), None)
        hidden = self.engine.hidden_now()  # read once for both searches
        for hit in self.engine.search(query, 1, mode="vector", query_vector=vector, hidden=hidden):
            best = max(best, (hit.details.get("cosine", float("-inf")), hit.title), key=lambda b: b[0])
        if self.engine.pending_count() > 0:
            keyword = self.engine.search(query, PENDING_CANDIDATES, mode="keyword", hidden=hidden)
            if keyword:
                chunk_vectors = self.engine.embedder.embed_documents([h.chunk for h in keyword])
                for hit, chunk_vector in zip(keyword, chunk_vectors, strict=True):
                    best = max(best, (float(chunk_vector @ vector), hit.title), key=lambda b: b[0])
        if best[0] == float("-inf"):
            return best[0], None, vector
        return best[0] - self._baseline(vector), best[1], vector

    def threshold(self) -> tuple[float, bool]:
        """(threshold, calibrated)."""
        if self.min_relevance is not None:
            return self.min_relevance, False
        fixed = next((v for prefix, v in FIXED_THRESHOLDS.items() if self.engine.embedder.name.startswith(prefix)), None)
        if fixed is not None:
            return fixed, False
        revision = self.engine.store.revision()
        with self._lock:
            if self._calibrated is not None and self._calibrated[0] == revision:
                return self._calibrated[1], True
        value = self._load(revision)
        if value is None:
            scores = [s for s in (self._best(p)[0] for p in PROBES) if s != float("-inf")]
            value = MIN_THRESHOLD
            if len(scores) >= 2:
                value = max(MIN_THRESHOLD, statistics.fmean(scores) + 3 * statistics.pstdev(scores))
            self._save(revision, value)
        with self._lock:
            self._calibrated = (revision, value)
        return value, True

    def _key(self, revision: int) -> str:
        return f"{self.engine.embedder.name}@{revision}"

    def _load(self, revision: int) -> float | None:
        if self.cache_path is None or not self.cache_path.is_file():
            return None
        try:
            value = json.loads(self.cache_path.read_text(encoding="utf-8")).get(self._key(revision))
        except (OSError, ValueError, AttributeError):
            return None
        return float(value) if isinstance(value, int | float) else None

    def _save(self, revision: int, value: float) -> None:
        if self.cache_path is None:
            return
        try:  # one entry: an older revision's threshold is of no use
            tmp = self.cache_path.with_suffix(".tmp")
            tmp.write_text(json.dumps({self._key(revision): value}), encoding="utf-8")
            tmp.replace(self.cache_path)
        except OSError as exc:
            log.warning("could not keep the relevance calibration in %s: %s", self.cache_path, exc)

    def evidence(self, query: str) -> KnowledgeEvidence:
        threshold, calibrated = self.threshold()
        best, title, _ = self._best(query)
        return KnowledgeEvidence(best=best if best != float("-inf") else -1.0, threshold=threshold, title=title,
                                 calibrated=calibrated)

    def relevant_hits(self, query: str, hits: Sequence[Hit]) -> list[Hit]:
        """The hits whose own relevance reaches the threshold (hits without a cosine are scored here)."""
        if not hits:
            return []
        threshold, _ = self.threshold()
        vector = np.asarray(self.engine.embedder.embed_query(query), dtype=np.float32)
        base = self._baseline(vector)
        missing = [h for h in hits if "cosine" not in h.details]
        extra: dict[int, float] = {}
        if missing:
            chunk_vectors = self.engine.embedder.embed_documents([h.chunk for h in missing])
            extra = {h.chunk_id: float(v @ vector) for h, v in zip(missing, chunk_vectors, strict=True)}
        return [h for h in hits if h.details.get("cosine", extra.get(h.chunk_id, -1.0)) - base >= threshold]


_GATES: weakref.WeakKeyDictionary[RagEngine, RelevanceGate] = weakref.WeakKeyDictionary()
_GATES_LOCK = threading.Lock()


def gate_for(engine: RagEngine, min_relevance: float | None = None, cache_path: Path | None = None) -> RelevanceGate:
    """The engine's gate (one per engine, so its calibration is shared by every request)."""
    with _GATES_LOCK:
        gate = _GATES.get(engine)
        if gate is None or gate.min_relevance != min_relevance or gate.cache_path != cache_path:
            gate = _GATES[engine] = RelevanceGate(engine, min_relevance=min_relevance, cache_path=cache_path)
        return gate


def settings_gate(engine: RagEngine, settings: Settings) -> RelevanceGate:
    """The gate as the settings configure it: ``rag_min_relevance``, calibration kept under ``home``."""
    return gate_for(engine, settings.rag_min_relevance, settings.home / "relevance.json")
