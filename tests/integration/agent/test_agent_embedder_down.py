"""An embedder that cannot be reached: requests that do not need it are answered as usual; the
knowledge base answers from keyword search and says vector search failed; nothing fails whole."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import NamedTuple

import pytest

from conftest import settings_for
from saber.agent import Agent, Answer
from saber.agent.memory import MemoryService
from saber.agent.memory.sqlite_store import SQLiteMemoryStore
from saber.rag.documents import EmbeddingError
from saber.rag.embedder import HashingEmbedder, Vectors
from saber.rag.engine import RagEngine
from saber.rag.store import SQLiteStore

DOWN = "embedder openai:m at http://127.0.0.1:9/v1/embeddings unreachable: connection refused"


class Breakable(HashingEmbedder):
    """The hashing embedder, unreachable while ``down`` is set (as an OpenAI endpoint that died)."""

    down = False

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if self.down:
            raise EmbeddingError(DOWN, retryable=True)
        return super().embed_documents(texts)

    def embed_query(self, text: str) -> Vectors:
        if self.down:
            raise EmbeddingError(DOWN, retryable=True)
        return super().embed_query(text)


class Rig(NamedTuple):
    agent: Agent
    embedder: Breakable
    engine: RagEngine
    memory: MemoryService


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    settings = settings_for(tmp_path)
    embedder = Breakable()
    engine = RagEngine(SQLiteStore(str(settings.sqlite_path)), embedder)
    memory = MemoryService(SQLiteMemoryStore(settings.sqlite_path), embedder)
    agent = Agent(settings, knowledge=engine, memory=memory, builtin=False)
    yield Rig(agent, embedder, engine, memory)
    await agent.aclose()


def _errors(answer: Answer) -> list[tuple[str, str]]:
    return [(e.data["where"], e.data["message"]) for e in answer.events if e.type == "error"]


async def test_a_new_user_is_answered_without_asking_the_embedder(rig: Rig) -> None:
    built, embedder = rig.agent, rig.embedder
    embedder.down = True
    answer = await built.ask("hello", user_id="newcomer")
    assert answer.mode == "chat" and "failed" not in answer.answer
    assert _errors(answer) == []


async def test_memories_that_cannot_be_recalled_are_named_and_the_turn_goes_on(rig: Rig) -> None:
    built, embedder, memory = rig.agent, rig.embedder, rig.memory
    await memory.remember("alice", "Alice drinks green tea every morning")
    embedder.down = True
    answer = await built.ask("hello", user_id="alice")
    assert answer.mode == "chat" and "request failed" not in answer.answer.lower()
    assert ("memory", f"memories not recalled: {DOWN}") in _errors(answer)


async def test_the_knowledge_base_answers_by_keywords_and_says_vector_search_failed(rig: Rig) -> None:
    built, embedder, engine = rig.agent, rig.embedder, rig.engine
    engine.ingest_text("Tea guide", "# Tea guide\n\nGreen tea is brewed at 80 degrees for two minutes.")
    embedder.down = True
    answer = await built.ask("how long is green tea brewed?", user_id="alice")
    assert answer.mode == "rag"
    assert "Green tea is brewed at 80 degrees" in answer.answer
    assert f"Vector search failed ({DOWN}): keyword search only." in answer.answer
    where = [w for w, _ in _errors(answer)]
    assert where == ["router", "rag"]
    nothing = await built.ask("what is a quasar?", user_id="alice", mode="rag")
    assert "has nothing relevant" in nothing.answer and "vector search failed" in nothing.answer


async def test_rag_search_falls_back_to_keywords(rig: Rig) -> None:
    embedder, engine = rig.embedder, rig.engine
    engine.ingest_text("Tea guide", "# Tea guide\n\nGreen tea is brewed at 80 degrees for two minutes.")
    embedder.down = True
    text, hits = await engine.aquery("green tea brewed", 3)
    assert [h.score_kind for h in hits] == ["bm25"]
    assert text.startswith(f"Vector search failed ({DOWN}): keyword search only.\n1 passage(s)")
