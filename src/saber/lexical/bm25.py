"""Keyword search: tokens for Chinese (jieba, search mode) and English (lower-cased words), and BM25.

The index lives in memory, built once per process from the tokens the store keeps for each chunk.
After a write (from this or another process) the engine reads only the chunks added and removed
since the revision its index holds (``KnowledgeStore.keyword_changes``) and applies them here:
new chunks are indexed, removed ones dropped; nothing is rebuilt or read again. (Keyword search
inside the store — SQLite FTS5, PostgreSQL full text — was measured too: a query cost about 8x
this index's at 10k and 100k chunks.)
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, TypeAlias

from saber.language import HAN, HAN_CHAR

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

_WORD = re.compile(rf"[0-9a-z\u00c0-\u024f]+(?:[._'][0-9a-z]+)*|[{HAN}]+")
_CJK = HAN_CHAR

_STOPWORD_TEXT = """a an and are as at be by for from has have how in is it its of on or that the this to was
    were what when where which who why will with do does can i you we they he she my your our
    的 了 是 在 和 与 及 或 也 都 就 而 及其 一个 这 那 有 吗 呢 吧 啊 什么 怎么 如何 哪些 为什么 多少 之 其"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())

def _jieba_cut(text: str) -> list[str]:
    """jieba's search-mode segmentation (words and their sub-words), from rjieba: the Rust port
    with the same dictionary, which loads in a tenth of the time (0.2 s against jieba's 0.75–1.9 s,
    most of a small ``saber ingest``'s start) and is 4.6 MB installed against jieba's 42 MB."""
    import rjieba

    return list(rjieba.cut_for_search(text, True))


def tokenize(text: str) -> list[str]:
    """Search tokens: English words lower-cased, Chinese runs segmented as jieba does (with sub-words)."""
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


_State: TypeAlias = "tuple[npt.NDArray[np.int64], npt.NDArray[np.float32], npt.NDArray[np.bool_], float]"
"""(chunk ids by row, token counts by row, alive by row, mean length of the alive rows)."""


class BM25Index:
    """Okapi BM25 (k1 = 1.5, b = 0.75) over token lists; scores are unbounded, not percentages.

    Incremental: ``add`` indexes only the new chunks and ``remove`` tombstones rows, so a write
    does not rebuild the index (``sync`` applies the difference to a store's current chunk ids).
    Removed rows are compacted away once they are half the index.
    """

    def __init__(self, ids: Sequence[int], docs: Iterable[Sequence[str]], *, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self._row_of: dict[int, int] = {}
        self._ids: list[int] = []
        self._lengths: list[float] = []
        self._alive: list[bool] = []
        self._postings: dict[str, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
        self._arrays: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]] = {}
        self._dead = 0
        self._cache: _State | None = None
        ids = list(ids)
        docs = list(docs)
        if len(ids) != len(docs):
            raise ValueError("BM25Index: ids and docs differ in length")
        self.add(ids, docs)

    def __len__(self) -> int:
        return len(self._ids) - self._dead

    @property
    def ids(self) -> set[int]:
        """The chunk ids currently indexed."""
        return set(self._row_of)

    def doc_freq(self, term: str) -> int:
        """How many indexed chunks hold ``term`` (BM25's document frequency, what its idf is made of)."""
        entry = self._postings.get(term)
        return 0 if entry is None else sum(1 for row in entry[0] if self._alive[row])

    def add(self, ids: Sequence[int], docs: Iterable[Sequence[str]]) -> None:
        """Index new chunks (an id already indexed is replaced)."""
        docs = list(docs)
        if len(ids) != len(docs):
            raise ValueError("BM25Index: ids and docs differ in length")
        self.remove([i for i in ids if i in self._row_of])
        for chunk_id, tokens in zip(ids, docs, strict=True):
            row = len(self._ids)
            self._row_of[int(chunk_id)] = row
            self._ids.append(int(chunk_id))
            self._lengths.append(float(len(tokens)))
            self._alive.append(True)
            for term, count in Counter(tokens).items():
                entry = self._postings[term]
                entry[0].append(row)
                entry[1].append(count)
                self._arrays.pop(term, None)
        self._cache = None

    def remove(self, ids: Iterable[int]) -> None:
        """Drop chunks from the index (unknown ids are ignored)."""
        for chunk_id in ids:
            row = self._row_of.pop(int(chunk_id), None)
            if row is not None:
                self._alive[row] = False
                self._lengths[row] = 0.0
                self._dead += 1
        self._cache = None
        if self._dead and self._dead * 2 >= len(self._ids):
            self._compact()

    def sync(self, ids: Sequence[int], docs: Sequence[Sequence[str]]) -> tuple[int, int]:
        """Make the index hold exactly ``ids``: add the new ones, remove the gone ones. (added, removed)."""
        current = set(self._row_of)
        wanted = set(ids)
        gone = current - wanted
        new = [(i, d) for i, d in zip(ids, docs, strict=True) if i not in current]
        self.remove(gone)
        self.add([i for i, _ in new], [d for _, d in new])
        return len(new), len(gone)

    def _compact(self) -> None:
        keep = [(i, r) for i, r in self._row_of.items()]
        tokens: dict[int, list[str]] = {r: [] for _, r in keep}
        for term, (rows, tfs) in self._postings.items():
            for row, tf in zip(rows, tfs, strict=True):
                if row in tokens:
                    tokens[row].extend([term] * tf)
        self._row_of, self._ids, self._lengths, self._alive = {}, [], [], []
        self._postings = defaultdict(lambda: ([], []))
        self._arrays, self._dead = {}, 0
        self.add([i for i, _ in keep], [tokens[r] for _, r in keep])

    def _state(self) -> _State:
        import numpy as np

        if self._cache is None:
            lengths = np.asarray(self._lengths, dtype=np.float32)
            alive = np.asarray(self._alive, dtype=bool)
            n = int(alive.sum())
            avg = float(lengths[alive].mean()) if n else 0.0
            self._cache = (np.asarray(self._ids, dtype=np.int64), lengths, alive, avg)
        return self._cache

    def _term(self, term: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]] | None:
        import numpy as np

        arrays = self._arrays.get(term)
        if arrays is None:
            entry = self._postings.get(term)
            if entry is None:
                return None
            arrays = (np.asarray(entry[0], dtype=np.int64), np.asarray(entry[1], dtype=np.float32))
            self._arrays[term] = arrays
        return arrays

    def search(self, query_tokens: Sequence[str], k: int) -> list[tuple[int, float]]:
        """Top ``k`` (chunk id, BM25 score), best first; chunks sharing no term are left out."""
        import numpy as np

        n = len(self)
        if n == 0 or k <= 0:
            return []
        ids, lengths, alive, avg_len = self._state()
        scores = np.zeros(len(ids), dtype=np.float32)
        touched = np.zeros(len(ids), dtype=bool)
        norm = self.k1 * (1 - self.b + self.b * lengths / (avg_len or 1.0))
        for term, qcount in Counter(query_tokens).items():
            arrays = self._term(term)
            if arrays is None:
                continue
            rows, tf = arrays
            live = alive[rows]
            rows, tf = rows[live], tf[live]
            if len(rows) == 0:
                continue
            idf = math.log(1 + (n - len(rows) + 0.5) / (len(rows) + 0.5))
            scores[rows] += qcount * idf * tf * (self.k1 + 1) / (tf + norm[rows])
            touched[rows] = True
        candidates = np.flatnonzero(touched)
        if len(candidates) == 0:
            return []
        top = candidates[np.argsort(-scores[candidates], kind="stable")[:k]]
        return [(int(ids[i]), float(scores[i])) for i in top]
