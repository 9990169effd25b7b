"""rag: retrieve from the knowledge base and answer grounded in the passages, with citations."""

from __future__ import annotations

import asyncio

from saber.agent.context import Turn
from saber.agent.generate import stream_answer
from saber.agent.prompts import RAG_ANSWER
from saber.events import RagResult, Token
from saber.rag.engine import format_passages


async def run_rag(turn: Turn) -> str:
    engine = turn.services.knowledge
    if engine is None or not await turn.services.knowledge_loaded():
        text = "知识库是空的：请先上传文档。" if turn.lang == "zh" else "The knowledge base is empty: upload documents first."
        await turn.emit(Token(content=text))
        return text
    hits = await asyncio.to_thread(engine.search, turn.query, 5)
    await turn.emit(RagResult(query=turn.query, hits=[h.to_event() for h in hits]))
    sections: list[str] = []
    blocks: list[str] = []
    for h in hits:
        if h.context not in sections:
            sections.append(h.context)
            blocks.append(f"[{len(sections)}] {h.title} ({h.source})\n{h.context}")
    if turn.lang == "zh":
        prompt = "资料：\n" + "\n\n".join(blocks) + f"\n\n问题：{turn.query}"
    else:
        prompt = "Passages:\n" + "\n\n".join(blocks) + f"\n\nQuestion: {turn.query}"
    extractive = format_passages(turn.query, hits)
    return await stream_answer(turn, turn.messages(RAG_ANSWER, prompt, with_history=False), fallback=extractive, where="rag")
