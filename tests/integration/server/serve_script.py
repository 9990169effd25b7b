"""A ``saber serve`` process for the SIGTERM test: the real serve loop, a test tool, a fake model.

Usage: serve_script.py HOME PORT MODEL_BASE_URL  (SLOW_SECONDS in the environment: how long
``slow_step`` waits when the plan does not say).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from saber.agent import Agent
from saber.cli.serve import run
from saber.config import Settings
from saber.llm.openai_compat import OpenAIChatModel
from saber.rag.embedder import HashingEmbedder
from saber.rag.engine import RagEngine
from saber.rag.store import SQLiteStore
from saber.server import create_app
from saber.tools import tool


@tool
async def slow_step(seconds: float) -> str:
    """Wait (a test tool); SLOW_SECONDS, when set, replaces the planned wait."""
    await asyncio.sleep(float(os.environ.get("SLOW_SECONDS") or seconds))
    return f"waited {seconds}"


def main() -> None:
    home, port, base_url = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    settings = Settings(home=home, search={"backend": "none"}, server={"shutdown_grace": 2.0}, graph={"step_timeout": 120})
    model = OpenAIChatModel("fake-model", base_url=base_url, api_key="k")
    engine = RagEngine(SQLiteStore(str(settings.sqlite_path)), HashingEmbedder())
    agent = Agent(settings, model=model, knowledge=engine, tools=[slow_step], builtin=False)
    run(create_app(agent, settings), host="127.0.0.1", port=port, grace=settings.server.shutdown_grace,
        log_level="warning")
    asyncio.run(agent.aclose(grace=1))


if __name__ == "__main__":
    main()
