"""Asking for an id or a version in the knowledge base, with no model and the real default embedder:
the passage that holds it is the answer, in Chinese and English. (With these notes the vector cut
alone drops LIC-7731's passage: best 0.041 < threshold 0.042, measured; near misses are tested on
the rule itself, in tests/integration/rag/test_rag_exact_relevance.py.)"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from saber.agent import Agent
from saber.events import RagResult
from saber.rag import RagEngine, SQLiteStore
from saber.rag.embedder import LocalUSEEmbedder

pytestmark = [pytest.mark.timeout(300)]

NOTES = {
    "法务流程": "合同上线前须经法务审批。本次法务审批单号为LIC-7731，由王敏负责跟进，预计周五前完成。",
    "Kafka 主题": "新的订单事件写入 topic 名为 orders-v2，保留七天，分区数为 12，消费组是 billing。",
    "Release notes 3.4": "Version 3.4.1 fixes error E1042 when the uploader times out.",
    "Onboarding": "New engineers get a laptop on their first day and meet their mentor before the weekly team meeting.",
    "差旅报销": "出差住宿标准为一线城市每晚六百元，其他城市四百元。报销需在出差结束后十五天内提交。",
    "Office moves": "The Berlin office moves to the third floor in May. Desks are assigned by team.",
    "数据备份": "生产数据库每天凌晨两点全量备份，备份保留三十天，恢复演练每季度一次。",
    "Coffee machine": "The coffee machine on the second floor is cleaned every Monday.",
}


async def test_an_id_or_a_version_asked_for_is_answered_from_its_passage(make_agent: Callable[..., Agent],
                                                                          tmp_path: Path) -> None:
    engine = RagEngine(SQLiteStore(tmp_path / "kb.db"), LocalUSEEmbedder())
    for title, text in NOTES.items():
        engine.ingest_text(title, text)
    agent = make_agent(None, knowledge=engine)
    for query, title, quoted in [("LIC-7731", "法务流程", "LIC-7731"), ("orders-v2", "Kafka 主题", "orders-v2"),
                                 ("3.4.1", "Release notes 3.4", "3.4.1"), ("LIC-7731 谁负责", "法务流程", "王敏")]:
        answer = await agent.ask(query, user_id="u1")
        hits = [h["title"] for e in answer.events if isinstance(e, RagResult) for h in e.hits]
        assert answer.mode == "rag" and title in hits, (query, answer.mode, hits, answer.answer)
        assert quoted in answer.answer and "nothing relevant" not in answer.answer, (query, answer.answer)
