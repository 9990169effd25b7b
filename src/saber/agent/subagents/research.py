"""research_agent: expands the goal into 2–3 queries and races the knowledge base against the web
for each; returns the findings with their sources. Nothing is made up: when every source fails,
the agent fails and says why."""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

import json_repair

from saber.agent.context import Turn
from saber.agent.subagents.base import SubAgentBase, ask_model
from saber.events import Error, Event, Step
from saber.graph.agents import SubAgentTask
from saber.graph.node import Node, NodeStatus
from saber.graph.runtime import GraphRuntime
from saber.llm.base import ModelError
from saber.tools.errors import ToolError

SOURCES = ("rag_search", "search_web")
_FILLER = re.compile(
    r"帮我|请|调研一下|调研|研究一下|研究|写成报告|写一份报告|写报告|生成报告|并?保存|保存到?知识库|落库|一下|"
    r"\b(?:please|research|investigate|write (?:a|up a) report(?: on)?|and save(?: it)?|save it|report on)\b",
    re.IGNORECASE,
)


def topic_of(goal: str) -> str:
    """The subject of a request, with instruction words removed ("帮我调研一下 K8s service 的几种类型" → "K8s service 的几种类型")."""
    topic = _FILLER.sub(" ", goal)
    topic = re.sub(r"[，,。.!！?？]+", " ", topic)
    return re.sub(r"\s+", " ", topic).strip(" 的") or goal.strip()


def rule_queries(goal: str) -> list[str]:
    topic = topic_of(goal)
    if re.search(r"[\u3400-\u9fff]", topic):
        return [topic, f"{topic} 概述", f"{topic} 最佳实践"]
    return [topic, f"{topic} overview", f"{topic} best practices"]


class ResearchAgent(SubAgentBase):
    name: ClassVar[str] = "research_agent"
    description: ClassVar[str] = (
        "Researches a goal: expands it into 2-3 queries and searches the knowledge base and the web for each "
        "(params: none; uses the node's goal). Returns findings with their sources."
    )

    async def run(self, turn: Turn, task: SubAgentTask) -> Any:
        sources = [s for s in SOURCES if s in turn.tools]
        if not sources:
            raise ToolError("research_agent: neither rag_search nor search_web is available")
        goal = task.goal or turn.query
        queries = await self.queries(turn, goal)
        findings, failures = await self.search(turn, task, queries, sources)
        if not findings:
            raise ToolError("research_agent found nothing: " + "; ".join(failures), retryable=False)
        result: dict[str, Any] = {"goal": goal, "queries": queries, "findings": findings, "failures": failures}
        if turn.has_model:
            try:
                result["summary"] = await ask_model(turn, _SUMMARY_PROMPT, json.dumps(findings, ensure_ascii=False))
            except ModelError as exc:
                result["summary_error"] = str(exc)
                await turn.emit(Error(message=f"research_agent: the summary model failed ({exc}); "
                                              "returning the findings without a summary", where="research_agent"))
        return result

    async def queries(self, turn: Turn, goal: str) -> list[str]:
        if turn.has_model:
            try:
                text = await ask_model(turn, _QUERY_PROMPT, goal)
                parsed = json_repair.loads(text)
                if isinstance(parsed, list):
                    queries = [str(q).strip() for q in parsed if str(q).strip()][:3]
                    if queries:
                        return queries
                why = "the model's output is not a JSON list of queries"
            except ModelError as exc:
                why = f"the model failed ({exc})"
            await turn.emit(Error(message=f"research_agent: planning the queries failed: {why}; "
                                          "using rule-made queries", where="research_agent"))
        return rule_queries(goal)

    async def search(self, turn: Turn, task: SubAgentTask, queries: list[str], sources: list[str]) -> tuple[list[dict[str, Any]], list[str]]:
        nodes = [
            Node(id=f"q{i}_{source}", tool=source, params={"query": q}, race_group=f"q{i}" if len(sources) > 1 else None)
            for i, q in enumerate(queries, start=1) for source in sources
        ]

        async def forward(event: Event) -> None:
            if event.type == "rag_result":
                await turn.emit(event)

        config = turn.services.graph_config(max_replan=0)
        run = await GraphRuntime(nodes, turn.tools, config, forward, task_id=f"{task.task_id}:{task.node_id}").run()
        findings: list[dict[str, Any]] = []
        failures: list[str] = []
        for i, q in enumerate(queries, start=1):
            group = [run.nodes[f"q{i}_{s}"] for s in sources]
            winner = next((n for n in group if n.status is NodeStatus.DONE), None)
            if winner is not None:
                findings.append({"query": q, "source": winner.tool, "content": winner.result})
                await turn.emit(Step(kind="observation", content=f"{q}: {winner.tool} answered", tool=winner.tool, node_id=task.node_id))
            else:
                failures.append(f"{q!r}: " + ", ".join(f"{n.tool} {n.status.value} ({n.error})" for n in group))
        return findings, failures


_QUERY_PROMPT = (
    "Expand the research goal into 2 or 3 short search queries in the goal's language. "
    'Answer with a JSON array of strings only, e.g. ["query one", "query two"].'
)
_SUMMARY_PROMPT = (
    "Summarise these research findings under the headings Findings, Evidence and Open Questions, in the language "
    "of the queries. Use only what the findings say and name the source of each point; do not add facts."
)
