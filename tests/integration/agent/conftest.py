"""An Agent on a temporary SABER_HOME, with the model scripted and no outside internet."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from saber.agent import Agent
from saber.agent.memory import MemoryService
from saber.agent.memory.sqlite_store import SQLiteMemoryStore
from saber.config import Settings
from saber.llm.base import ChatModel
from saber.rag.embedder import HashingEmbedder
from saber.rag.engine import RagEngine
from saber.rag.store import SQLiteStore

CLOSED = "http://127.0.0.1:9"
"""Port 9 (discard) is closed here: a connection is refused at once, as when offline."""


def settings_for(home: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "home": home,
        "search": {"backend": "none"},
        "weather": {"geocoding_url": f"{CLOSED}/v1/search", "forecast_url": f"{CLOSED}/v1/forecast"},
        "graph": {"retry_delay": 0.0, "max_attempts": 2},
    }
    for section, items in overrides.items():  # a section's keys over the defaults above, one by one
        values[section] = {**values.get(section, {}), **items} if isinstance(items, dict) else items
    return Settings(**values)


@pytest.fixture
async def make_agent(tmp_path: Path) -> AsyncIterator[Callable[..., Agent]]:
    agents: list[Agent] = []

    def factory(model: ChatModel | None = None, *, memory_model: ChatModel | None = None, **kwargs: Any) -> Agent:
        settings = kwargs.pop("settings", None) or settings_for(tmp_path)
        embedder = HashingEmbedder()
        engine = kwargs.pop("knowledge", None) or RagEngine(SQLiteStore(str(settings.sqlite_path)), embedder)
        memory = MemoryService(SQLiteMemoryStore(settings.sqlite_path), embedder, model=memory_model,
                               extraction=settings.memory.extraction, extraction_batch=settings.memory.extraction_batch)
        agent = Agent(settings, model=model, knowledge=engine, memory=memory, **kwargs)
        agents.append(agent)
        return agent

    yield factory
    for agent in agents:
        await agent.aclose()
