"""Keyword search: tokens for Chinese (jieba, search mode) and English (lower-cased words), and BM25.

The index lives in memory and is rebuilt from the tokens the store keeps for each chunk, whenever
the store's revision changes (so another process's ingest is seen). Building it for 100k chunks
takes seconds; beyond a few hundred thousand chunks a server-side full-text index would be needed.
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

_WORD = re.compile(r"[0-9a-z\u00c0-\u024f]+(?:[._'][0-9a-z]+)*|[\u3400-\u9fff\uf900-\ufaff]+")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")

_STOPWORD_TEXT = """a an and are as at be by for from has have how in is it its of on or that the this to was
    were what when where which who why will with do does can i you we they he she my your our
    的 了 是 在 和 与 及 或 也 都 就 而 及其 一个 这 那 有 吗 呢 吧 啊 什么 怎么 如何 哪些 为什么 多少 之 其"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())

_jieba_lock = threading.Lock()
_jieba_ready = False


def _jieba_cut(text: str) -> list[str]:
    global _jieba_ready
    import jieba

    if not _jieba_ready:
        with _jieba_lock:
            if not _jieba_ready:
                jieba.setLogLevel(logging.WARNING)
                jieba.initialize()
                _jieba_ready = True
    return list(jieba.cut_for_search(text))


def tokenize(text: str) -> list[str]:
    """Search tokens: English words lower-cased, Chinese runs segmented by jieba (with sub-words)."""
    tokens: list[str] = []
    for m in _WORD.finditer(text.lower()):
        word = m.group(0)
        if _CJK.match(word):
            tokens.extend(t for t in _jieba_cut(word) if t.strip() and t not in STOPWORDS)
        elif word not in STOPWORDS:
            tokens.append(word)
            if "." in word or "_" in word or "'" in word:  # "asyncio.gather" also matches "gather"
                tokens.extend(p for p in re.split(r"[._']", word) if p and p not in STOPWORDS)
    return tokens


@dataclass(frozen=True, kw_only=True, slots=True)
class _Postings:
    rows: npt.NDArray[np.int64]
    tf: npt.NDArray[np.float32]


class BM25Index:
    """Okapi BM25 (k1 = 1.5, b = 0.75) over token lists; scores are unbounded, not percentages."""

    def __init__(self, ids: Sequence[int], docs: Iterable[Sequence[str]], *, k1: float = 1.5, b: float = 0.75) -> None:
        self.ids = np.asarray(list(ids), dtype=np.int64)
        self.k1, self.b = k1, b
        lengths: list[int] = []
        postings: dict[str, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
        for row, tokens in enumerate(docs):
            lengths.append(len(tokens))
            for term, count in Counter(tokens).items():
                entry = postings[term]
                entry[0].append(row)
                entry[1].append(count)
        self.lengths = np.asarray(lengths, dtype=np.float32)
        if len(self.lengths) != len(self.ids):
            raise ValueError("BM25Index: ids and docs differ in length")
        self.avg_len = float(self.lengths.mean()) if len(self.lengths) else 0.0
        self._postings = {
            term: _Postings(rows=np.asarray(r, dtype=np.int64), tf=np.asarray(t, dtype=np.float32))
            for term, (r, t) in postings.items()
        }

    def __len__(self) -> int:
        return len(self.ids)

    def search(self, query_tokens: Sequence[str], k: int) -> list[tuple[int, float]]:
        """Top ``k`` (chunk id, BM25 score), best first; chunks sharing no term are left out."""
        n = len(self.ids)
        if n == 0 or k <= 0:
            return []
        scores = np.zeros(n, dtype=np.float32)
        touched = np.zeros(n, dtype=bool)
        norm = self.k1 * (1 - self.b + self.b * self.lengths / (self.avg_len or 1.0))
        for term, qcount in Counter(query_tokens).items():
            p = self._postings.get(term)
            if p is None:
                continue
            idf = math.log(1 + (n - len(p.rows) + 0.5) / (len(p.rows) + 0.5))
            tf = p.tf
            scores[p.rows] += qcount * idf * tf * (self.k1 + 1) / (tf + norm[p.rows])
            touched[p.rows] = True
        candidates = np.flatnonzero(touched)
        if len(candidates) == 0:
            return []
        top = candidates[np.argsort(-scores[candidates], kind="stable")[:k]]
        return [(int(self.ids[i]), float(scores[i])) for i in top]
