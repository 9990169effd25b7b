"""Servers for the server tests: a real uvicorn on loopback, the model a FakeOpenAIServer."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from server_helpers import LiveServer, make_agent, settings_for

from saber.llm.openai_compat import OpenAIChatModel
from saber.testing import FakeOpenAIServer


@pytest.fixture
def fake_llm() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def serve(tmp_path: Path, fake_llm: FakeOpenAIServer) -> Iterator[Callable[..., LiveServer]]:
    """``serve(keys=False, model=True, tools=(), embedder=None, **settings)`` starts a server and stops it
    after the test."""
    started: list[LiveServer] = []

    def start(*, keys: bool = False, model: bool = True, home: Path | None = None, **kwargs: Any) -> LiveServer:
        agent_kwargs = {k: kwargs.pop(k) for k in ("tools", "builtin", "embedder") if k in kwargs}
        settings = settings_for(home or tmp_path / "home", keys=keys, **kwargs)
        chat_model = OpenAIChatModel(fake_llm.model, base_url=fake_llm.base_url, api_key="k") if model else None
        live = LiveServer(make_agent(settings, chat_model, **agent_kwargs), settings).start()
        started.append(live)
        return live

    yield start
    for live in started:
        live.stop()
