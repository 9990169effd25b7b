"""Long-term memory: facts about a user, kept with an importance and a recency, recalled by meaning.

Everything passes the gates before it is embedded or stored. A new memory that says the same as
an existing one (same normalised text, or cosine ≥ ``merge_threshold``) is merged into it: the new
wording replaces the old, the importance goes up, and it counts as used now.

Vectors come from an ``Embedder`` (unit length, so the dot product is the cosine); a user's
memories are compared by brute force in numpy, which is exact and fast for thousands of rows.
When the embedder changes, stale vectors are re-embedded on the next use.
"""

from __future__ import annotations

import math
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from saber.agent.memory.gates import Rejection, check_memory_text
from saber.agent.memory.store import MemoryRecord, MemoryStore, NewMemory, check_user_id, normalise_text
from saber.agent.memory.thresholds import MemoryThresholds, thresholds_for
from saber.rag.embedder import Embedder

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

DEFAULT_MERGE_THRESHOLD = 0.97
"""Tuned for the bundled multilingual-e5-small, whose cosines run high: rewordings of one fact
("I like tea" / "I love tea") sit at 0.98-0.99, while different facts of the same shape reach
0.93-0.96 ("我喜欢喝茶" / "我喜欢喝咖啡": 0.959), so the often-quoted 0.92 would merge them."""
DEFAULT_HALF_LIFE_DAYS = 30.0
MAX_MEMORY_CHARS = 500
SUGGESTED_MIN_RELEVANCE = 0.03
"""For the bundled E5 model: related memories measured 0.03-0.11 above the baseline, unrelated
ones at most 0.023 (tea / pets / allergies / birthdays / jobs against weather, time, greetings,
coding and research queries, Chinese and English)."""

# Sentences about nothing in particular: how similar a query is to them is its baseline.
_ANCHORS = (
    "今天是星期一", "这是一句普通的话", "我去了商店", "他们在开会", "我有一个朋友",
    "The sky is blue", "I went to the store", "This is an ordinary sentence",
    "The meeting starts at noon", "I like things",
)
_LOCK_STRIPES = 64


@dataclass(frozen=True, kw_only=True, slots=True)
class MemoryCandidate:
    text: str
    importance: float = 0.5
    source: str = "rules"
    """rules | model | explicit"""


@dataclass(frozen=True, kw_only=True, slots=True)
class AddOutcome:
    action: Literal["stored", "merged", "rejected"]
    text: str
    """The candidate's text; for a secret, redacted."""
    record: MemoryRecord | None = None
    rejection: Rejection | None = None

    @property
    def reason(self) -> str:
        return self.rejection.reason if self.rejection else ""


@dataclass(frozen=True, kw_only=True, slots=True)
class RecalledMemory:
    """A long-term memory recalled for a query, with its similarity and its relevance."""

    record: MemoryRecord
    similarity: float
    """Cosine similarity of the query and the memory, -1..1."""
    relevance: float
    """similarity minus the query's baseline (its similarity to sentences about nothing in
    particular): small embedders put every pair of short texts at 0.75-0.85, so an absolute
    threshold cannot tell related from unrelated; the margin over the baseline can."""
    score: float
    """similarity × weight(importance, recency): what recall ranks by."""

    @property
    def text(self) -> str:
        return self.record.text


def memory_weight(importance: float, age_seconds: float, half_life_days: float = DEFAULT_HALF_LIFE_DAYS) -> float:
    """f(importance, recency) = (0.6 + 0.4·importance) × (0.7 + 0.3·2^(−age / half_life)).

    ``age`` is the time since the memory was last stored again or recalled. The weight stays in
    [0.42, 1], so similarity decides what is relevant and importance and recency break ties: a
    fresh, important memory keeps its full similarity; an old, unimportant one keeps 42 % of it.
    """
    imp = min(1.0, max(0.0, importance))
    recency = math.pow(2.0, -max(0.0, age_seconds) / (half_life_days * 86400.0)) if half_life_days > 0 else 1.0
    return (0.6 + 0.4 * imp) * (0.7 + 0.3 * recency)


class LongTermMemory:
    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder,
        *,
        merge_threshold: float | None = None,
        min_relevance: float | None = None,
        half_life_days: float = DEFAULT_HALF_LIFE_DAYS,
        max_chars: int = MAX_MEMORY_CHARS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``merge_threshold`` and ``min_relevance`` left out are the embedder's (measured for the
        bundled E5 model, calibrated on first use for others: ``saber.agent.memory.thresholds``)."""
        if merge_threshold is not None and not 0.0 < merge_threshold <= 1.0:
            raise ValueError("merge_threshold: must be in (0, 1]")
        self.store = store
        self.embedder = embedder
        self._given = (merge_threshold, min_relevance)
        self._thresholds: MemoryThresholds | None = None
        self.half_life_days = half_life_days
        self.max_chars = max_chars
        self._clock = clock
        # Find-duplicate-then-insert must not interleave for one user; striped locks bound memory.
        self._locks = tuple(threading.Lock() for _ in range(_LOCK_STRIPES))
        self._anchors: npt.NDArray[np.float32] | None = None

    @property
    def thresholds(self) -> MemoryThresholds:
        """The merge and relevance thresholds in force; the first use may calibrate them (it
        embeds a few dozen probe sentences), so call it from a worker thread, as every method
        here is."""
        if self._thresholds is None:
            merge, relevance = self._given
            self._thresholds = thresholds_for(self.embedder, self.baseline, merge=merge, min_relevance=relevance)
        return self._thresholds

    @property
    def merge_threshold(self) -> float:
        return self.thresholds.merge

    def baseline(self, query_vector: npt.NDArray[np.float32]) -> float:
        """Mean of the query's three highest similarities to the neutral anchor sentences."""
        import numpy as np

        if self._anchors is None:
            self._anchors = self.embedder.embed_documents(list(_ANCHORS))
        sims = np.sort(self._anchors @ query_vector)
        return float(sims[-3:].mean())

    def _lock_for(self, user_id: str) -> threading.Lock:
        return self._locks[zlib.crc32(user_id.encode()) % _LOCK_STRIPES]

    # --- writing -----------------------------------------------------------------------------

    def add(self, user_id: str, text: str, *, importance: float = 0.5, source: str = "explicit") -> AddOutcome:
        return self.add_many(user_id, [MemoryCandidate(text=text, importance=importance, source=source)])[0]

    def add_many(self, user_id: str, candidates: Sequence[MemoryCandidate]) -> list[AddOutcome]:
        """Gate, embed (one batch) and store or merge each candidate, in order."""
        check_user_id(user_id)
        outcomes: list[AddOutcome | None] = []
        accepted: list[tuple[int, MemoryCandidate, str]] = []
        for cand in candidates:
            text = " ".join(cand.text.split())
            rejection = check_memory_text(text) if text else Rejection(kind="invalid", reason="empty memory")
            if rejection is None and len(text) > self.max_chars:
                rejection = Rejection(kind="invalid", reason=f"longer than {self.max_chars} characters")
            if rejection is not None:
                outcomes.append(AddOutcome(action="rejected", text=rejection.redact(text), rejection=rejection))
            else:
                accepted.append((len(outcomes), cand, text))
                outcomes.append(None)
        if accepted:
            vectors = self.embedder.embed_documents([text for _, _, text in accepted])
            with self._lock_for(user_id):
                existing = self._current(user_id)
                for (slot, cand, text), vector in zip(accepted, vectors, strict=True):
                    outcome = self._store_one(user_id, cand, text, vector, existing)
                    outcomes[slot] = outcome
        return [o for o in outcomes if o is not None]

    def _store_one(
        self, user_id: str, cand: MemoryCandidate, text: str, vector: npt.NDArray[np.float32], existing: list[MemoryRecord]
    ) -> AddOutcome:
        new = NewMemory(
            text=text, norm=normalise_text(text), importance=cand.importance, source=cand.source,
            embedder=self.embedder.name, vector=vector, now=self._clock(),
        )
        target = self._near_duplicate(new, existing)
        if target is not None:
            record = self.store.merge_memory(user_id, target.id, new)
            if record is not None:
                _replace(existing, record)
                return AddOutcome(action="merged", text=text, record=record)
        record, merged = self.store.insert_memory(user_id, new)
        _replace(existing, record)
        return AddOutcome(action="merged" if merged else "stored", text=text, record=record)

    def _near_duplicate(self, new: NewMemory, existing: list[MemoryRecord]) -> MemoryRecord | None:
        import numpy as np

        best: MemoryRecord | None = None
        best_sim = -2.0
        for record in existing:
            if record.norm == new.norm:
                return record
            sim = float(np.dot(record.vector, new.vector)) if record.vector.shape == new.vector.shape else -2.0
            if sim > best_sim:
                best, best_sim = record, sim
        return best if best_sim >= self.merge_threshold else None

    # --- reading -----------------------------------------------------------------------------

    def recall(
        self, user_id: str, query: str, k: int = 3, *, min_similarity: float = -1.0, min_relevance: float | None = None,
        relevant_only: bool = False,
    ) -> list[RecalledMemory]:
        """The ``k`` memories with the highest score for ``query``, optionally only those at least
        ``min_similarity`` similar and ``min_relevance`` above the baseline (see ``RecalledMemory``);
        ``relevant_only`` uses the embedder's ``thresholds.min_relevance``. Recalled memories count
        as used now."""
        check_user_id(user_id)
        if k <= 0 or not query.strip():
            return []
        records = self._current(user_id)
        if not records:  # before the thresholds: calibrating them embeds, and nothing needs it yet
            return []
        if relevant_only and min_relevance is None:
            min_relevance = self.thresholds.min_relevance
        import numpy as np  # only a user with memories needs it

        q = self.embedder.embed_query(query)
        base = self.baseline(q)
        sims = np.stack([r.vector for r in records]) @ q
        now = self._clock()
        scored = [
            RecalledMemory(
                record=r, similarity=float(s), relevance=float(s) - base,
                score=float(s) * memory_weight(r.importance, now - r.last_used_at, self.half_life_days),
            )
            for r, s in zip(records, sims, strict=True)
            if float(s) >= min_similarity and (min_relevance is None or float(s) - base >= min_relevance)
        ]
        scored.sort(key=lambda m: m.score, reverse=True)
        top = scored[:k]
        self.store.touch_memories(user_id, [m.record.id for m in top], now=now)
        return top

    def records(self, user_id: str) -> list[MemoryRecord]:
        return self.store.list_memories(user_id)

    def delete(self, user_id: str, memory_id: int) -> bool:
        return self.store.delete_memory(user_id, memory_id)

    def _current(self, user_id: str) -> list[MemoryRecord]:
        """The user's memories, with vectors from another embedder (or dimension) re-embedded."""
        records = self.store.list_memories(user_id)
        stale = [r for r in records if r.embedder != self.embedder.name or r.vector.shape != (self.embedder.dim,)]
        if not stale:
            return records
        fresh = self.embedder.embed_documents([r.text for r in stale])
        updates = {r.id: v for r, v in zip(stale, fresh, strict=True)}
        self.store.update_vectors(user_id, updates, self.embedder.name)
        return [
            _with_vector(r, updates[r.id], self.embedder.name) if r.id in updates else r for r in records
        ]


def _with_vector(record: MemoryRecord, vector: npt.NDArray[np.float32], embedder: str) -> MemoryRecord:
    import numpy as np

    return replace(record, vector=np.asarray(vector, dtype=np.float32), embedder=embedder)


def _replace(records: list[MemoryRecord], record: MemoryRecord) -> None:
    for i, r in enumerate(records):
        if r.id == record.id:
            records[i] = record
            return
    records.append(record)
