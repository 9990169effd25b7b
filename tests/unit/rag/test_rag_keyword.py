from __future__ import annotations

from saber.lexical.bm25 import BM25Index, tokenize
from saber.lexical.fusion import reciprocal_rank_fusion


def test_tokenize_mixes_jieba_and_english_words() -> None:
    tokens = tokenize("中国高铁的复兴号 uses asyncio.gather and Cache-Control")
    assert {"高铁", "复兴", "asyncio.gather", "gather", "cache", "control"} <= set(tokens)
    assert "的" not in tokens and "and" not in tokens


def test_bm25_prefers_rarer_terms_and_skips_non_matching() -> None:
    docs = [tokenize("green tea water temperature"), tokenize("tea tea tea history"), tokenize("rail network")]
    index = BM25Index([10, 11, 12], docs)
    hits = index.search(tokenize("tea temperature"), 5)
    assert [cid for cid, _ in hits][:1] == [10]
    assert 12 not in [cid for cid, _ in hits]
    assert index.search(tokenize("nothing matches"), 5) == []


def test_rrf_rewards_agreement_and_is_not_a_percentage() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["b", "d"]])
    assert fused[0][0] == "b"
    assert fused[0][1] == 1 / 62 + 1 / 61
    assert all(score < 2 / 61 + 1e-12 for _, score in fused)


def test_incremental_index_matches_a_fresh_build() -> None:
    docs = {1: ["cache", "header", "max", "age"], 2: ["高铁", "时速"], 3: ["cache", "cache", "etag"], 4: ["pod", "service"]}
    index = BM25Index([1, 2], [docs[1], docs[2]])
    index.add([3, 4], [docs[3], docs[4]])
    index.remove([2])
    fresh = BM25Index([1, 3, 4], [docs[1], docs[3], docs[4]])
    for query in (["cache"], ["etag", "pod"], ["高铁"], ["cache", "service"]):
        assert index.search(query, 5) == fresh.search(query, 5)
    assert index.ids == {1, 3, 4} and len(index) == 3


def test_sync_applies_only_the_difference_and_compacts() -> None:
    index = BM25Index([1, 2, 3], [["a"], ["b"], ["c"]])
    assert index.sync([2, 3, 5], [["b"], ["c"], ["a", "e"]]) == (1, 1)
    assert [cid for cid, _ in index.search(["a"], 5)] == [5]
    index.sync([5], [["a", "e"]])  # two of three rows gone: compacted, results unchanged
    assert [cid for cid, _ in index.search(["a", "e"], 5)] == [5] and len(index) == 1
    assert index.search(["b"], 5) == []
