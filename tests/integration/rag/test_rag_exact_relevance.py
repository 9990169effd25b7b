"""The relevance cut keeps a passage that holds the id, version, error code or rare name asked for,
whatever its vector score: mixed Chinese/English notes in the real store (SQLite and PostgreSQL
with pgvector), embedded by the real default embedder (USE, judged by multilingual-e5-small)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from saber.agent.relevance import RelevanceGate, judge_for
from saber.rag import RagEngine, open_store
from saber.rag.embedder import LocalUSEEmbedder

pytestmark = [pytest.mark.timeout(300)]

NOTES = {
    "法务流程": "合同上线前须经法务审批。本次法务审批单号为LIC-7731，由王敏负责跟进，预计周五前完成。",
    "Kafka 主题": "新的订单事件写入 topic 名为 orders-v2，保留七天，分区数为 12，消费组是 billing。",
    "Release notes 3.4": "Version 3.4.1 fixes error E1042 when the uploader times out. "
                         "The PaymentGateway service now retries twice before giving up.",
    "值班手册": "夜间告警先看监控大盘，再联系值班同学。数据库连接池耗尽时报错 ERR_POOL_EXHAUSTED，需要重启 api 服务。",
    "Onboarding": "New engineers get a laptop on their first day, meet their mentor, and set up the VPN "
                  "before the weekly team meeting.",
    "差旅报销": "出差住宿标准为一线城市每晚六百元，其他城市四百元。报销需在出差结束后十五天内提交。",
    "Office moves": "The Berlin office moves to the third floor in May. Desks are assigned by team; "
                    "lockers are first come, first served.",
    "数据备份": "生产数据库每天凌晨两点全量备份，备份保留三十天，恢复演练每季度一次。",
    "Coffee machine": "The coffee machine on the second floor is cleaned every Monday. Report problems to facilities.",
    "项目周会": "项目周会每周二上午十点开始，会议纪要由轮值同学整理后发到群里。",
}

EXACT = [
    ("LIC-7731", "法务流程"),
    ("查一下LIC-7731的审批进度", "法务流程"),
    ("orders-v2", "Kafka 主题"),
    ("topic orders-v2 保留多久", "Kafka 主题"),
    ("3.4.1", "Release notes 3.4"),
    ("E1042", "Release notes 3.4"),
    ("PaymentGateway", "Release notes 3.4"),
    ("ERR_POOL_EXHAUSTED", "值班手册"),
    ("Kafka", "Kafka 主题"),
]
"""Queries whose passage must be kept for the exact rare term it holds."""
NEAR_MISSES = ["LIC-7732", "orders-v3", "3.4.2", "E1043", "ERR_POOL_EXHAUSTED_V2"]
COMMON = ["team meeting", "周会什么时候开", "coffee machine", "报销要多久", "hello", "你好", "the office floor"]


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=[pytest.mark.postgres,
                                                                                  pytest.mark.slow])])
def gate(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RelevanceGate]:
    """The notes ingested once per store (the threshold is calibrated once: a dozen probe questions)."""
    url = None
    if request.param == "postgres":
        import psycopg
        from sqlalchemy import make_url

        admin = str(request.getfixturevalue("pgvector_admin_url"))
        name = f"saber_exact_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"'.encode())
        url = make_url(admin).set(database=name).render_as_string(hide_password=False)
    engine = RagEngine(open_store(url, str(tmp_path_factory.mktemp("exact") / "saber.db")), LocalUSEEmbedder())
    for title, text in NOTES.items():
        engine.ingest_text(title, text)
    yield RelevanceGate(engine, judge=judge_for(engine.embedder))
    engine.close()
    if url is not None:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())


def test_an_exact_rare_term_keeps_its_passage_in_both_languages(gate: RelevanceGate) -> None:
    for query, title in EXACT:
        hits = gate.engine.search(query, 5)
        kept = [h.title for h in gate.relevant_hits(query, hits)]
        assert title in kept, f"{query!r}: {title!r} was cut (kept: {kept})"
        evidence = gate.evidence(query)
        assert evidence.relevant and evidence.title == title, f"{query!r}: {evidence}"


def test_a_near_miss_or_a_common_word_is_no_exact_match(gate: RelevanceGate) -> None:
    for query in NEAR_MISSES + COMMON:
        hits = gate.engine.search(query, 5)
        assert hits, query  # keyword or vector search found passages: the rule saw them
        assert gate.exact_matches(query, hits) == {}, query
        assert gate.evidence(query).exact is None, query


def test_the_vector_cut_alone_drops_some_of_them(gate: RelevanceGate) -> None:
    """What the rule is for: with these notes some exact passages score under the threshold."""
    threshold, _ = gate.threshold()
    below = [q for q, _ in EXACT if gate.evidence(q).best < threshold]
    assert below, "every exact query also passes by its score: the notes no longer show the problem"
    assert all(gate.evidence(q).exact is not None for q in below)
