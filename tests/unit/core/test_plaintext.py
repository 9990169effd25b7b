"""Issue #33 item 4: search queries and titles come from the plain text of what the user wrote,
in both languages: no "**Oslo**", no link targets, no code ticks, no heading marks."""

from __future__ import annotations

import pytest

from saber.agent.subagents.doc import report_title
from saber.agent.subagents.research import rule_queries, topic_of
from saber.plaintext import TITLE_SCAN, plain_line, plain_text
from saber.planner import rule_plan
from saber.tools import Tool

AGENTS = {"research_agent": "r", "writer_agent": "w", "review_agent": "v", "doc_agent": "d"}


def _search(args: dict[str, object]) -> object:
    raise AssertionError("not executed in planning")


TOOLS = {"search_web": Tool.from_json_schema("search_web", "search", {"properties": {"query": {"type": "string"}},
                                                                       "required": ["query"]}, _search)}


@pytest.mark.parametrize(("written", "plain"), [
    ("Research **Oslo** and write a report", "Research Oslo and write a report"),
    ("调研**奥斯陆**并写一份报告", "调研奥斯陆并写一份报告"),
    ("Look into [the Oslo metro](https://example.org/oslo) history", "Look into the Oslo metro history"),
    ("研究一下 [奥斯陆地铁](https://example.org/oslo) 的历史", "研究一下 奥斯陆地铁 的历史"),
    ("Research `asyncio.TaskGroup` usage", "Research asyncio.TaskGroup usage"),
    ("调研 `asyncio.TaskGroup` 的用法", "调研 asyncio.TaskGroup 的用法"),
    ("# Oslo\n\nresearch it", "Oslo research it"),
    ("## 奥斯陆\n\n调研一下", "奥斯陆 调研一下"),
    ("*Oslo* and __Bergen__ ~~Paris~~", "Oslo and Bergen Paris"),
    ("<b>Oslo</b> report", "Oslo report"),
])
def test_markdown_marks_are_removed(written: str, plain: str) -> None:
    assert plain_line(written) == plain


@pytest.mark.parametrize("text", ["What is 3 * 4 * 5?", "snake_case_name and C++", "价格是 5*3 元", "2026-07-15 10:00",
                                  "email me at a_b@example.org"])
def test_text_that_is_not_markdown_is_kept_as_written(text: str) -> None:
    assert plain_line(text) == text


def test_blocks_are_lines_in_plain_text_and_one_line_in_titles() -> None:
    assert plain_text("# 奥斯陆\n\n- 历史\n- 地铁") == "奥斯陆\n历史\n地铁"
    assert plain_line("# 奥斯陆\n\n- 历史\n- 地铁") == "奥斯陆 历史 地铁"


def test_a_long_request_is_read_only_as_far_as_a_title_needs() -> None:
    assert len(plain_line("**Oslo** " * 10_000)) <= TITLE_SCAN


@pytest.mark.parametrize(("goal", "queries"), [
    ("Research **Oslo** and write a report", ["Oslo", "Oslo overview", "Oslo best practices"]),
    ("调研**奥斯陆**并写一份报告", ["奥斯陆", "奥斯陆 概述", "奥斯陆 最佳实践"]),
    ("Research [Oslo](https://en.wikipedia.org/wiki/Oslo) and write a report", ["Oslo", "Oslo overview",
                                                                                "Oslo best practices"]),
    ("调研一下 `tokio` 运行时并写成报告", ["tokio 运行时", "tokio 运行时 概述", "tokio 运行时 最佳实践"]),
    ("# 调研奥斯陆", ["奥斯陆", "奥斯陆 概述", "奥斯陆 最佳实践"]),
])
def test_research_queries_are_plain_text(goal: str, queries: list[str]) -> None:
    assert rule_queries(goal) == queries
    assert "*" not in topic_of(goal) and "](" not in topic_of(goal)


@pytest.mark.parametrize(("query", "goal"), [
    ("Research **Oslo** and write a report", "Research Oslo and write a report"),
    ("调研**奥斯陆**并写一份报告", "调研奥斯陆并写一份报告"),
])
def test_the_planned_tasks_are_titled_in_plain_text(query: str, goal: str) -> None:
    plan = rule_plan(query, TOOLS, agents=AGENTS)
    assert [n.goal for n in plan.nodes if n.type == "sub_agent"] and all(
        n.goal == goal for n in plan.nodes if n.type == "sub_agent")


@pytest.mark.parametrize(("query", "report", "title"), [
    ("Research **Oslo** and write a report", "no heading", "Research Oslo and write a report"),
    ("写一份报告", "# **奥斯陆** 简介\n\n正文", "奥斯陆 简介"),
    ("写一份《**奥斯陆**指南》", "", "奥斯陆指南"),
])
def test_report_titles_are_plain_text(query: str, report: str, title: str) -> None:
    assert report_title(query, report) == title
