"""Rare terms of a query and their exact matches in a passage: ids, versions, error codes and rare
names in Chinese and English; near misses and common words never count."""

from __future__ import annotations

import pytest

from saber.lexical.bm25 import tokenize
from saber.rag.exact import RareTerm, exact_match, identifiers, rare_terms

PASSAGES = [
    "合同上线前须经法务审批。本次法务审批单号为LIC-7731，由王敏负责跟进。",
    "新的订单事件写入 topic 名为 orders-v2，保留七天。",
    "Version 3.4.1 fixes error E1042. The PaymentGateway service now retries twice.",
    "连接池耗尽时报错 ERR_POOL_EXHAUSTED，需要重启 api 服务。订单号 20231105001 已退款。",
    "Kafka brokers run on three hosts. The weekly team meeting is on Tuesday. 项目周会每周二开。",
    "The coffee machine is cleaned every Monday. Follow-up questions go to facilities.",
    "Invoices go out monthly. 报销需在十五天内提交。",
    "The office is on the third floor. 办公室在三楼。",
    "Meeting rooms are booked in the calendar. 会议室在日历里预订。",
    "Lunch is served at noon. 午饭十二点开始。",
]


def terms_of(query: str) -> list[RareTerm]:
    docs = [set(tokenize(p)) for p in PASSAGES]
    return rare_terms(query, lambda token: sum(token in d for d in docs), len(PASSAGES))


def matched(query: str) -> list[int]:
    """The passages (by index) that hold a rare term of ``query`` exactly."""
    terms = terms_of(query)
    return [i for i, p in enumerate(PASSAGES) if exact_match(terms, p) is not None]


@pytest.mark.parametrize(("query", "passage"), [
    ("LIC-7731", 0),
    ("lic-7731", 0),                      # case aside
    ("ＬＩＣ－７７３１", 0),                  # full-width, as a Chinese input method writes it
    ("查一下LIC-7731的审批进度", 0),          # embedded in Chinese, no spaces around it
    ("What is the status of LIC-7731?", 0),
    ("orders-v2", 1),
    ("topic orders-v2 保留多久", 1),
    ("3.4.1", 2),
    ("E1042 是什么错误", 2),
    ("what does PaymentGateway do", 2),
    ("ERR_POOL_EXHAUSTED", 3),
    ("订单20231105001退款了吗", 3),
    ("Kafka", 4),                         # a rare name, in one chunk here
    ("王敏负责什么", 0),                       # a rare Chinese name
])
def test_an_exact_rare_term_matches_its_passage(query: str, passage: int) -> None:
    assert matched(query) == [passage]


@pytest.mark.parametrize("query", [
    "LIC-7732", "LIC-77310", "7731", "orders-v3", "orders-v2-dlq", "orders", "3.4.2", "3.4", "E1043",
    "ERR_POOL_EXHAUSTED_V2", "paymentgateway2", "订单20231105002退款了吗",
])
def test_a_near_miss_matches_nothing(query: str) -> None:
    assert matched(query) == [], terms_of(query)


@pytest.mark.parametrize("query", [
    "team meeting", "周会什么时候开", "coffee machine", "follow-up questions", "报销要多久", "the office floor",
    "会议室怎么订", "hello", "你好", "What's new in version 3?", "2024", "lunch at 12",
])
def test_common_words_trigger_no_exact_match(query: str) -> None:
    assert terms_of(query) == [] and matched(query) == []


def test_a_word_in_most_passages_is_not_rare_in_this_knowledge_base() -> None:
    docs = [{"kafka"}] * 9 + [set()]
    assert rare_terms("Kafka", lambda t: sum(t in d for d in docs), len(docs)) == []
    assert [t.text for t in rare_terms("Kafka", lambda t: sum(t in d for d in docs[-2:]), len(docs))] == ["kafka"]


def test_identifiers_are_whole_runs() -> None:
    assert identifiers("单号为LIC-7731-B，topic orders-v2.") == {"lic-7731-b", "topic", "orders-v2"}


def test_a_long_paste_is_read_for_rare_terms_only_from_its_start() -> None:
    from saber.rag.exact import SCAN_CHARS

    assert [t.text for t in terms_of("LIC-7731 " + "x" * SCAN_CHARS + " orders-v2")] == ["LIC-7731"]
