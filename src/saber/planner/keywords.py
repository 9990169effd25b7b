"""The keywords rules read, in one table: the router and the rule planner both use it.

Chinese alternatives match as substrings; ASCII ones on word boundaries, so "time" does not
fire on "sometimes". An alternative written ``re:...`` is a regular expression, for the words
that need an exception (研究 but not 研究生, "time" but not "time complexity"). Extend a pattern
here and both the router and the rule planner follow.
"""

from __future__ import annotations

import re


def words(*alternatives: str) -> re.Pattern[str]:
    parts = [
        a[3:] if a.startswith("re:") else re.escape(a) if not a.isascii() else rf"\b{re.escape(a)}\b"
        for a in alternatives
    ]
    return re.compile("|".join(parts), re.IGNORECASE)


_NOT_TIME_TOPIC = r"(?!\s*(?:complexity|complexities|series|frame|frames|line|lines|out|limit|travel|machine))"
TIME = words("几点", "re:时间(?!复杂度|序列|轴|线|管理|戳|成本|片|段|差|机器)", "日期", "星期几", "时区", "what time",
             "time is it", "current time", "date today", "today's date", "timezone",
             rf"re:\btime\b{_NOT_TIME_TOPIC}", "clock")
WEATHER = words("天气", "气温", "下雨", "下雪", "温度", "weather", "temperature", "forecast", "rain", "raining", "snow")
SEARCH = words("搜索", "搜一下", "查一下", "查查", "查询", "帮我查", "最新", "新闻", "search", "look up", "lookup", "google",
               "news", "latest")
"""Explicit requests to search."""
QUESTION = words("是什么", "是谁", "介绍一下", "为什么", "怎么做", "如何做", "如何学习", "what is", "what are", "who is",
                 "how to", "how do", "why")
"""Open questions: worth a search only when no other rule claimed the query."""
SUMMARY = words("总结", "汇总", "summarize", "summarise", "summary")
KNOWLEDGE = words("知识库", "文档库", "我的文档", "资料", "笔记", "knowledge base", "my documents", "my notes", "my files")
RESEARCH = words("调研", "re:研究(?!生|所|院|员|室|领域|方向|表明|发现|显示)", "research", "investigate")
DOCUMENT = words("报告", "文档", "方案", "report", "document", "proposal", "write-up", "white paper")
PRODUCE = words("写", "生成", "总结", "保存", "整理", "分析", "write", "generate", "draft", "save", "create", "produce",
                "analyse", "analyze")
SAVE = words("保存", "落库", "写入", "文档库", "知识库", "存档", "save", "store it", "archive", "knowledge base")


def is_research_request(query: str) -> bool:
    """调研/研究, or a report/document/plan to write, generate, summarise or save."""
    return bool(RESEARCH.search(query) or (DOCUMENT.search(query) and PRODUCE.search(query)))
