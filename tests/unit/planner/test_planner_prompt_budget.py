"""The planner prompt for a typical query stays small: compact cards, only the tools it may need.

Sizes are estimated with ``saber.llm.tokens.estimate_tokens`` (a Han character one token, four
other characters one), the count ``bench/tool_selection.py`` uses too.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from saber.config import Settings
from saber.llm.tokens import estimate_tokens
from saber.planner import build_planner_prompt, parse_plan
from saber.planner.preselect import preselect_agents, preselect_tools
from saber.rag.embedder import HashingEmbedder
from saber.rag.engine import RagEngine
from saber.rag.store import SQLiteStore
from saber.rag.tools import knowledge_tools
from saber.tools import Tool
from saber.tools.builtin import builtin_tools
from saber.tools.system import system_tools

BUDGET = 500
AGENTS = {
    "research_agent": "Researches a goal: expands it into 2-3 queries and searches the knowledge base and the web for "
                      "each (params: none; uses the node's goal). Returns findings with their sources.",
    "writer_agent": "Writes a Markdown report (summary, analysis, recommendations, next steps) from the findings of the "
                    "nodes it depends on. Returns the report.",
    "review_agent": "Reviews a draft report from the node it depends on: lists problems, weak claims and evidence gaps.",
    "doc_agent": "Saves the report written by writer_agent (it must depend on it) to the document library and the "
                 "knowledge base, so later questions can find it. Returns the document id.",
}
TYPICAL = [
    ("北京天气和时间", {"get_weather", "get_time"}),
    ("What's the weather in Paris and the time in Tokyo?", {"get_weather", "get_time"}),
    ("搜索一下最新的 Python 3.13 新特性，再看看东京现在几点", {"search_web", "get_time"}),
    ("look up the latest news about the Mars mission and the weather in Houston", {"search_web", "get_weather"}),
    ("在我的知识库里找一下报销流程", {"rag_search"}),
]


@pytest.fixture
def tools(tmp_path: Path) -> Iterator[dict[str, Tool]]:
    """The tools a default Agent registers: the built-ins, the workspace tools and the knowledge base's."""
    settings = Settings(home=tmp_path, search={"backend": "none"})
    engine = RagEngine(SQLiteStore(str(tmp_path / "kb.db")), HashingEmbedder())
    every = [*builtin_tools(settings), *system_tools(settings).tools, *knowledge_tools(engine)]
    yield {t.name: t for t in every}
    engine.close()


def _prompt(query: str, tools: dict[str, Tool]) -> str:
    messages = build_planner_prompt(query, preselect_tools(query, tools), agents=preselect_agents(query, AGENTS))
    return "\n".join(m.content for m in messages)


@pytest.mark.parametrize(("query", "needed"), TYPICAL)
def test_a_typical_query_gets_a_prompt_within_budget_that_lists_what_it_needs(
        tools: dict[str, Tool], query: str, needed: set[str]) -> None:
    assert {"read_file", "write_document", "get_time"} <= set(tools)
    text = _prompt(query, tools)
    assert estimate_tokens(text) <= BUDGET, f"{estimate_tokens(text)} tokens:\n{text}"
    for name in needed:
        assert f"- {name}(" in text
    assert "- read_file(" not in text and "- write_document(" not in text and "research_agent" not in text


def test_specialist_tools_and_sub_agents_are_listed_when_the_query_asks_for_them(tools: dict[str, Tool]) -> None:
    report = _prompt("调研一下向量数据库，写一份报告并保存", tools)
    assert "- write_document(" in report and "- research_agent:" in report and "- writer_agent:" in report
    for query in ("知识库里有哪些文档", "知识库里都有什么", "what's in my knowledge base?"):
        assert "- list_documents(" in _prompt(query, tools), query
    files = _prompt("read README.md in the workspace and summarize it", tools)
    assert "- read_file(" in files and "- list_dir(" in files


def test_a_tool_the_caller_selected_is_always_listed(tools: dict[str, Tool]) -> None:
    shown = preselect_tools("北京天气", tools, keep=["list_documents"])
    assert "list_documents" in shown and "read_file" not in shown


def test_the_compact_example_is_a_plan_that_parses(tools: dict[str, Tool]) -> None:
    system = build_planner_prompt("weather in Paris", tools)[0].content
    example = system.split("Example", 1)[1].split("\n", 1)[1]
    parsed = parse_plan(example, tools)
    assert [(n.tool, n.race_group) for n in parsed.nodes] == [
        ("get_weather", None), ("search_web", "search"), ("rag_search", "search")]


def test_estimate_counts_han_characters_one_each() -> None:
    assert estimate_tokens("北京天气") == 4
    assert estimate_tokens("abcdefgh") == 2
    assert estimate_tokens("") == 0
