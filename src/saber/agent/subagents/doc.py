"""doc_agent: saves the report with ``write_document(..., ingest_to_rag=True)`` and returns its id."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from saber.agent.context import Turn
from saber.agent.subagents.base import SubAgentBase, upstream_of
from saber.graph.agents import SubAgentTask
from saber.plaintext import plain_line
from saber.tools.errors import ToolError

_BOOK_TITLE = re.compile(r"《([^》]+)》")
_HEADING = re.compile(r"^#\s+(.+)$", re.MULTILINE)


def report_title(query: str, report: str) -> str:
    """A title from 《》 in the request, else the report's first heading, else the request itself;
    in plain text ("# **Oslo** report" → "Oslo report")."""
    for source in (query, report):
        if m := _BOOK_TITLE.search(source):
            return plain_line(m.group(1)) or m.group(1).strip()
    if m := _HEADING.search(report):
        return plain_line(m.group(1)) or m.group(1).strip()
    return (plain_line(query) or query.strip())[:80]


class DocAgent(SubAgentBase):
    name: ClassVar[str] = "doc_agent"
    description: ClassVar[str] = (
        "Saves the report written by writer_agent (it must depend on it) to the document library and the knowledge "
        "base, so later questions can find it. Returns the document id."
    )

    async def run(self, turn: Turn, task: SubAgentTask) -> Any:
        write = turn.tools.get("write_document")
        if write is None:
            raise ToolError("doc_agent: the write_document tool is not available")
        report = upstream_of(task, "writer_agent")
        if not isinstance(report, str):
            report = next((v for v in task.upstream.values() if isinstance(v, str) and v.lstrip().startswith("#")), None)
        if not report:
            raise ToolError("doc_agent found no report to save: make it depend on writer_agent")
        title = report_title(task.goal or turn.query, report)
        summary_match = re.search(r"^(?!#)(?!>)\S.+$", report, re.MULTILINE)
        result = await write.run({
            "title": title, "content_md": report, "doc_type": "report", "source": f"saber:{turn.task_id}",
            "summary": summary_match.group(0)[:300] if summary_match else "", "ingest_to_rag": True,
        })
        return result
