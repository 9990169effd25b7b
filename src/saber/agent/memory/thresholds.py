"""Memory's two similarity thresholds, for the embedder actually configured.

*merge*: the cosine at or above which a new memory updates an old one ("I like tea" / "I love
tea") instead of being stored beside it; *min_relevance*: how far above its baseline (its
similarity to neutral sentences) a memory must score for a query to recall it. Cosines are not
comparable across embedders — multilingual-e5-small puts different facts of the same shape at
0.93-0.96, a feature-hashing embedder puts rewordings far apart — so a number tuned on one model
is wrong on another.

The bundled E5 model uses the values measured for it (``MEASURED``). Any other embedder is
calibrated once, on first use: the probe pairs below are embedded and each threshold is put
midway between what must not pass and what must (or, where the two overlap, just above what must
not pass: an embedder that cannot tell two facts apart never merges them, and recalls only what
it clearly relates). Settings (``memory.merge_threshold``, ``memory.min_relevance``) override
either value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from saber.rag.embedder import Embedder

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

Source = Literal["measured", "calibrated", "settings"]


@dataclass(frozen=True, kw_only=True, slots=True)
class MemoryThresholds:
    merge: float
    min_relevance: float
    source: Source


MEASURED: dict[str, MemoryThresholds] = {
    "local:multilingual-e5-small": MemoryThresholds(merge=0.97, min_relevance=0.03, source="measured"),
}
"""Embedder name → thresholds measured for it (see ``longterm.DEFAULT_MERGE_THRESHOLD`` and
``SUGGESTED_MIN_RELEVANCE`` for the measurements)."""

SAME_FACT = (
    ("I like tea", "I love tea"),
    ("My favourite colour is blue", "My favorite color is blue"),
    ("我喜欢喝茶", "我很喜欢喝茶"),
    ("I work as a nurse", "I'm a nurse by profession"),
    ("我对花生过敏", "我花生过敏"),
)
"""Rewordings of one fact: these should merge."""

DIFFERENT_FACTS = (
    ("I like tea", "I like coffee"),
    ("My favourite colour is blue", "My favourite colour is green"),
    ("我喜欢喝茶", "我喜欢喝咖啡"),
    ("I work as a nurse", "I work as a teacher"),
    ("我对花生过敏", "我对海鲜过敏"),
    ("My sister lives in Paris", "My brother lives in Paris"),
)
"""Different facts of the same shape: these must never merge."""

RELATED = (
    ("I am allergic to peanuts", "Can I eat this peanut cake?"),
    ("My cat is called Momo", "What should I feed my cat?"),
    ("我在上海的一家医院当护士", "护士的工作时间一般是怎样的"),
    ("I prefer answers in short bullet points", "Summarise this article for me in points"),
    ("我喜欢喝绿茶", "推荐几种好喝的茶"),
)
"""(memory, query) pairs where recalling the memory helps."""

UNRELATED = (
    ("I am allergic to peanuts", "What time is it in Tokyo?"),
    ("My cat is called Momo", "Write a Python function that sorts a list"),
    ("我在上海的一家医院当护士", "今天北京天气怎么样"),
    ("I prefer answers in short bullet points", "hello"),
    ("我喜欢喝绿茶", "帮我算一下 123 乘以 456"),
    ("My birthday is in May", "Explain how TCP handshakes work"),
)
"""(memory, query) pairs where the memory has nothing to do with the query."""

_UNSEPARATED_MARGIN = 0.01


def _between(must_not: float, must: float, *, ceiling: float) -> float:
    if must > must_not:
        return (must + must_not) / 2
    return min(ceiling, must_not + _UNSEPARATED_MARGIN)


def calibrate(embedder: Embedder, baseline: Callable[[npt.NDArray[np.float32]], float]) -> MemoryThresholds:
    """Thresholds for ``embedder`` from the probe pairs; ``baseline`` is the query's baseline
    (``LongTermMemory.baseline``)."""

    def pair_cosines(pairs: Sequence[tuple[str, str]]) -> list[float]:
        vectors = embedder.embed_documents([t for pair in pairs for t in pair])
        return [float(vectors[2 * i] @ vectors[2 * i + 1]) for i in range(len(pairs))]

    def relevances(pairs: Sequence[tuple[str, str]]) -> list[float]:
        memories = embedder.embed_documents([m for m, _ in pairs])
        out = []
        for i, (_, query) in enumerate(pairs):
            q = embedder.embed_query(query)
            out.append(float(memories[i] @ q) - baseline(q))
        return out

    merge = _between(max(pair_cosines(DIFFERENT_FACTS)), min(pair_cosines(SAME_FACT)), ceiling=1.0)
    relevance = _between(max(relevances(UNRELATED)), min(relevances(RELATED)), ceiling=2.0)
    return MemoryThresholds(merge=min(1.0, max(merge, 1e-6)), min_relevance=relevance, source="calibrated")


def thresholds_for(
    embedder: Embedder, baseline: Callable[[npt.NDArray[np.float32]], float], *,
    merge: float | None = None, min_relevance: float | None = None,
) -> MemoryThresholds:
    """``merge`` and ``min_relevance`` when given; otherwise measured or calibrated for ``embedder``."""
    if merge is not None and min_relevance is not None:
        return MemoryThresholds(merge=merge, min_relevance=min_relevance, source="settings")
    found = MEASURED.get(embedder.name) or calibrate(embedder, baseline)
    return MemoryThresholds(
        merge=found.merge if merge is None else merge,
        min_relevance=found.min_relevance if min_relevance is None else min_relevance,
        source=found.source if merge is None and min_relevance is None else "settings",
    )
