"""Reciprocal rank fusion: combine rankings without comparing their incomparable scores."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

RRF_K = 60


def reciprocal_rank_fusion(rankings: Sequence[Sequence[K]], *, k: int = RRF_K) -> list[tuple[K, float]]:
    """Items ordered by sum over rankings of 1 / (k + rank), rank starting at 1.

    The fused score only orders items; with two rankings its maximum is 2 / (k + 1) ≈ 0.033,
    so it must never be shown as a similarity or a percentage. Ties keep first-seen order.
    """
    scores: dict[K, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda kv: -kv[1])
