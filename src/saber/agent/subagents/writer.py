"""writer_agent: turns upstream findings into a Markdown report (summary, analysis, next steps)."""

from __future__ import annotations

from typing import Any, ClassVar

from saber.agent.context import Turn
from saber.agent.generate import no_model_note
from saber.agent.observations import as_text
from saber.agent.subagents.base import SubAgentBase, ask_model, upstream_text
from saber.agent.subagents.research import topic_of
from saber.graph.agents import SubAgentTask
from saber.tools.errors import ToolError


class WriterAgent(SubAgentBase):
    name: ClassVar[str] = "writer_agent"
    description: ClassVar[str] = (
        "Writes a Markdown report (summary, analysis, recommendations, next steps) from the findings of the nodes "
        "it depends on. Returns the report."
    )

    async def run(self, turn: Turn, task: SubAgentTask) -> Any:
        if not task.upstream:
            raise ToolError("writer_agent needs findings: make it depend on a research step")
        material = upstream_text(task.upstream)
        if turn.has_model:
            heads = "摘要、分析、建议、下一步" if turn.lang == "zh" else "Summary, Analysis, Recommendations, Next steps"
            system = (
                f"Write a Markdown report with a '# ' title and the sections {heads}, in the language of the goal. "
                "Use only the material given; cite its sources; say where evidence is missing instead of guessing."
            )
            return await ask_model(turn, system, f"Goal: {task.goal or turn.query}\n\nMaterial:\n{material}")
        return self.assemble(turn, task)

    def assemble(self, turn: Turn, task: SubAgentTask) -> str:
        """The no-model report: findings quoted with their sources under fixed headings, labelled."""
        topic = topic_of(task.goal or turn.query)
        zh = turn.lang == "zh"
        lines = [f"# {topic}{' 调研报告' if zh else ' — research notes'}", "", f"> {no_model_note(turn)}", ""]
        lines.append("## 资料摘录" if zh else "## Findings (quoted)")
        for key, value in task.upstream.items():
            findings = value.get("findings") if isinstance(value, dict) else None
            if findings:
                for f in findings:
                    lines += ["", f"### {f.get('query')} ({'来源' if zh else 'source'}: {f.get('source')})", "", as_text(f.get("content"), 3000)]
            else:  # a step's result under its tool or agent ("n2:get_time" → "get_time")
                lines += ["", f"### {key.split(':', 1)[-1]}", "", as_text(value, 3000)]
        lines += ["", "## 下一步" if zh else "## Next steps", "",
                  "- 配置语言模型后重新生成分析与建议。" if zh else "- Configure a language model to have these findings analysed."]
        return "\n".join(lines)
