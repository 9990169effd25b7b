from __future__ import annotations

from saber.rag.fusion import reciprocal_rank_fusion
from saber.rag.keyword import BM25Index, tokenize


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
