"""rag: retrieve from the knowledge base and answer grounded in the passages, with citations.

Only passages whose relevance reaches the calibrated threshold (``saber.agent.relevance``) are used;
when none does, the answer says so in the user's language instead of quoting unrelated text.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from saber.agent.context import Turn
from saber.agent.generate import stream_answer
from saber.agent.prompts import RAG_ANSWER
from saber.agent.relevance import settings_gate
from saber.agent.render import nothing_relevant
from saber.config import Settings
from saber.events import Error, RagResult, Token
from saber.rag.documents import EmbeddingError, Hit
from saber.rag.engine import RagEngine, format_passages


@dataclass(frozen=True, kw_only=True, slots=True)
class _Found:
    hits: list[Hit]
    """The relevant hits (with the embedder down: the keyword hits)."""
    evidence: str = ""
    """Why none is relevant, in words (when none is)."""
    failed: str | None = None
    """Why vector search failed, when it did."""
    pending: int | None = None
    """Chunks still without a vector, when the hits were found by keyword alone."""


def _relevant_search(engine: RagEngine, query: str, settings: Settings) -> _Found:
    """The relevant passages — blocking, run in a thread. With the embedder down, relevance cannot
    be measured: the keyword hits are used, and the failure is said."""
    hits, failed = engine.search_or_keywords(query, 5)
    if failed:
        return _Found(hits=hits, failed=failed, pending=engine.pending_for(hits))
    gate = settings_gate(engine, settings)
    try:
        relevant = gate.relevant_hits(query, hits)
        return _Found(hits=relevant, evidence=gate.evidence(query).describe() if not relevant else "",
                      pending=engine.pending_for(relevant))
    except EmbeddingError as exc:  # the embedder failed between the search and the gate
        keyword = engine.search(query, 5, mode="keyword")
        return _Found(hits=keyword, failed=str(exc), pending=engine.pending_for(keyword))


async def run_rag(turn: Turn) -> str:
    engine = turn.services.knowledge
    if engine is None or not await turn.services.knowledge_loaded():
        text = "知识库是空的：请先上传文档。" if turn.lang == "zh" else "The knowledge base is empty: upload documents first."
        await turn.emit(Token(content=text))
        return text
    found = await asyncio.to_thread(_relevant_search, engine, turn.query, turn.services.settings)
    relevant, evidence, failed = found.hits, found.evidence, found.failed
    if failed:
        await turn.emit(Error(message=f"vector search failed, keyword search only (relevance not checked): {failed}",
                              where="rag"))
    await turn.emit(RagResult(query=turn.query, hits=[h.to_event() for h in relevant]))
    if not relevant:
        text = nothing_relevant(turn.query, turn.lang, f"keyword search only, vector search failed: {failed}"
                                if failed else evidence)
        await turn.emit(Token(content=text))
        return text
    sections: list[str] = []
    blocks: list[str] = []
    for h in relevant:
        if h.context not in sections:
            sections.append(h.context)
            blocks.append(f"[{len(sections)}] {h.title} ({h.source})\n{h.context}")
    if turn.lang == "zh":
        prompt = "资料：\n" + "\n\n".join(blocks) + f"\n\n问题：{turn.query}"
    else:
        prompt = "Passages:\n" + "\n\n".join(blocks) + f"\n\nQuestion: {turn.query}"
    extractive = format_passages(turn.query, relevant, vector_failure=failed, pending=found.pending)
    return await stream_answer(turn, turn.messages(RAG_ANSWER, prompt, with_history=False), fallback=extractive, where="rag")
