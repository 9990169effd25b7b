"""Which tools and sub-agents the planner prompt lists for a query: the ones it may need.

Every tool card costs prompt tokens on every plan. The everyday tools (the clock, the weather,
web and knowledge-base search) and any tool Saber has no cue for (custom and MCP tools, which
the tool index selects among when there are many) are always listed. The specialist built-ins
are listed only when the query says something of their kind: the workspace file tools when it
talks of files, folders or code; the document-library tools when it talks of documents, reports
or saving (searching the knowledge base is ``rag_search``, an everyday tool); the sub-agents when it asks for research or a report. A tool the caller selected is
always listed. The cues lean towards listing: a tool left out costs a wrong plan, one too many
only some tokens.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TypeVar

from saber.lexical import keywords as kw

T = TypeVar("T")

_WORKSPACE = kw.words(
    "文件", "目录", "文件夹", "路径", "代码", "源码", "工作区", "日志", "仓库", "脚本", "配置", "读取", "命令", "运行",
    "file", "files", "folder", "folders", "directory", "directories", "dir", "path", "workspace", "code", "source",
    "repo", "repository", "grep", "log", "logs", "script", "config", "readme", "line", "lines", "command", "run",
    "execute", "shell", r"re:\b[\w-]+\.(?:py|js|ts|md|txt|json|toml|yaml|yml|csv|log|cfg|ini|html|css|go|rs|java|sh)\b",
)
_DOCUMENTS = kw.words(
    "文档", "报告", "文档库", "保存", "存档", "入库", "索引", "版本", "记录下来",
    "document", "documents", "doc", "docs", "report", "reports", "save", "store", "archive",
    "library", "index", "ingest", "version", "re:知识库(?:里|中)?(?:都)?有(?:哪些|什么)",
    r"re:\bwhat(?:'s| is) in (?:my|the|our) knowledge base",
)
_SUB_AGENTS = kw.words("调研", "研究", "报告", "分析", "总结", "审阅", "评审", "research", "investigate", "report",
                       "analyse", "analyze", "analysis", "summarize", "summarise", "review", "write-up")

SPECIALISTS: dict[str, re.Pattern[str]] = {
    **dict.fromkeys(("read_file", "list_dir", "search_files", "write_file", "exec_command"), _WORKSPACE),
    **dict.fromkeys(("write_document", "list_documents", "read_document", "ingest_document"), _DOCUMENTS),
}
"""Built-in tools listed only when the query matches their cue."""


def _named(query: str, name: str) -> bool:
    return name.casefold() in query.casefold()


def preselect_tools(query: str, tools: Mapping[str, T], *, keep: Iterable[str] = ()) -> dict[str, T]:
    """``tools`` without the specialists the query gives no cue for (``keep`` is always listed)."""
    kept = set(keep)
    return {name: t for name, t in tools.items()
            if name in kept or name not in SPECIALISTS or SPECIALISTS[name].search(query) or _named(query, name)}


def preselect_agents(query: str, agents: Mapping[str, str]) -> dict[str, str]:
    """The sub-agents when the query asks for research, analysis or a report (or names one), else none."""
    if kw.is_research_request(query) or _SUB_AGENTS.search(query) or any(_named(query, n) for n in agents):
        return dict(agents)
    return {}
