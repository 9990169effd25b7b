"""Issue #33 item 4 through the agent: a request written in Markdown is planned, searched and
listed by its plain text, in both languages."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from saber.agent import Agent
from saber.events import GraphReady
from saber.tools import tool


@pytest.mark.parametrize(("query", "plain", "topic"), [
    ("Research **Oslo** and write a report", "Research Oslo and write a report", "Oslo"),
    ("调研**奥斯陆**并写一份报告", "调研奥斯陆并写一份报告", "奥斯陆"),
])
async def test_markdown_in_a_request_reaches_no_query_and_no_title(
        make_agent: Callable[..., Agent], query: str, plain: str, topic: str) -> None:
    searched: list[str] = []

    @tool
    def search_web(query: str) -> str:
        """The web, as seen from here (the outside internet is the one thing replaced)."""
        searched.append(query)
        return f"1. {query} — a page about it (https://example.org/{len(searched)})"

    agent = make_agent(None)
    agent.registry.register(search_web)
    answer = await agent.ask(query, user_id="u1")
    ready = next(e for e in answer.events if isinstance(e, GraphReady))
    goals = [n["goal"] for n in ready.nodes if n.get("goal")]
    assert goals and all(g == plain for g in goals)
    assert topic in searched and not any("*" in q for q in searched), searched
    (task,) = await agent.tasks(unfinished=False)
    assert task["title"] == plain and task["query"] == query
