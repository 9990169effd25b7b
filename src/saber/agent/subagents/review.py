"""review_agent: lists problems and evidence gaps in a draft."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from saber.agent.context import Turn
from saber.agent.generate import no_model_note
from saber.agent.subagents.base import SubAgentBase, ask_model, upstream_of, upstream_text
from saber.agent.subagents.research import topic_of
from saber.graph.agents import SubAgentTask
from saber.tools.errors import ToolError


class ReviewAgent(SubAgentBase):
    name: ClassVar[str] = "review_agent"
    description: ClassVar[str] = "Reviews a draft report from the node it depends on: lists problems, weak claims and evidence gaps."

    async def run(self, turn: Turn, task: SubAgentTask) -> Any:
        draft = upstream_of(task, "writer_agent")
        text = draft if isinstance(draft, str) else upstream_text(task.upstream)
        if not text.strip():
            raise ToolError("review_agent needs a draft: make it depend on writer_agent")
        if turn.has_model:
            return await ask_model(
                turn,
                "Review this report. List concrete problems, claims without a source, and evidence gaps, as a Markdown "
                "list in the report's language. Do not rewrite the report.",
                text,
            )
        return self.checks(turn, text)

    def checks(self, turn: Turn, text: str) -> str:
        """Mechanical checks that need no model, labelled as such."""
        zh = turn.lang == "zh"
        problems: list[str] = []
        if not re.search(r"^# ", text, re.MULTILINE):
            problems.append("缺少标题" if zh else "no title")
        if len(re.findall(r"^## ", text, re.MULTILINE)) < 2:
            problems.append("章节少于两个" if zh else "fewer than two sections")
        if not re.search(r"https?://|来源|source", text, re.IGNORECASE):
            problems.append("没有注明来源" if zh else "no sources named")
        if len(text) < 400:
            problems.append("内容过短" if zh else "very short")
        topic = topic_of(turn.query)
        if not on_topic(topic, text):
            problems.append(f"资料与主题“{topic}”关系不大，结论不可靠" if zh else
                            f"the findings barely mention the topic {topic!r}: do not rely on them")
        head = "审阅（规则检查）：" if zh else "Review (rule checks):"
        body = "\n".join(f"- {p}" for p in problems) or ("- 未发现结构问题" if zh else "- no structural problems found")
        return f"{head}\n{body}\n\n{no_model_note(turn)}"


def on_topic(topic: str, report: str, *, share: float = 0.3) -> bool:
    """Whether the report's body (its title aside) contains at least ``share`` of the topic's words."""
    from saber.lexical.bm25 import tokenize

    wanted = {t for t in tokenize(topic) if len(t) > 1}
    if not wanted:
        return True
    body = report.split("\n", 1)[-1] if report.startswith("#") else report
    present = set(tokenize(body))
    return len(wanted & present) / len(wanted) >= share
