"""research_agent: expands the goal into 2–3 queries and races the knowledge base against the web
for each; returns the findings with their sources. Nothing is made up: when every source fails,
the agent fails and says why."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any, ClassVar

import json_repair

from saber.agent.context import Turn
from saber.agent.subagents.base import SubAgentBase, ask_model
from saber.events import Error, RagResult, Step
from saber.graph.agents import SubAgentTask
from saber.graph.node import Node, NodeStatus
from saber.graph.runtime import GraphRuntime
from saber.language import has_han
from saber.llm.base import ModelError
from saber.plaintext import plain_line
from saber.rag.documents import Hit
from saber.rag.engine import format_passages
from saber.tools.errors import ToolError

SOURCES = ("rag_search", "search_web")
_LEAD = re.compile(
    r"^(?:请|帮我|麻烦|能否|可以)?\s*(?:调研一下|调研|研究一下|研究|了解一下|写一份|写一篇|写个|写|生成一份|生成|起草|整理一份|整理|"
    r"please|could you|can you|research|investigate|look into|write(?: up)?|draft|generate|create|produce|prepare)\s*"
    r"(?:(?:a|an|the)?\s*(?:short\s+|brief\s+|detailed\s+)?(?:report|document|proposal|write-up|summary)\s*)?"
    r"(?:关于|有关|about|on|into|regarding)?\s*",
    re.IGNORECASE,
)
_TAIL = re.compile(
    r"(?:[，,。;；]|\s)*(?:并且?|然后|再|最后)?\s*(?:写成|写一份|写个|生成|保存|整理成|总结|落库|存档|写入|做成|出一份).*$"
    r"|(?:[，,。;；]|\s)*(?:and(?: then)?|then)?\s*\b(?:summari[sz]e|write|save|draft|generate|create|produce|store|put)\b.*$"
    r"|(?:[，,。;；]|\s)*(?:并且?|然后|and|then)\s*$",
    re.IGNORECASE | re.DOTALL,
)
_TRAIL = re.compile(r"(?:的)?(?:调研)?(?:报告|文档|方案|白皮书)$|\s+(?:report|document|proposal)$", re.IGNORECASE)


def topic_of(goal: str) -> str:
    """The subject of a request, without the instructions around it ("调研一下量子计算的最新进展并写成报告"
    → "量子计算的最新进展", "Research the Rust language and write a report" → "the Rust language"),
    read as Markdown: "Research **Oslo**" → "Oslo", links by their text, code by its content."""
    text = plain_line(goal).strip(" 。.!！?？")
    for _ in range(3):  # "请帮我调研一下…": several leading instruction words
        stripped = _LEAD.sub("", text, count=1)
        if stripped == text:
            break
        text = stripped
    tail = _TAIL.search(text)
    if tail is not None and tail.start() > 0:  # "总结方法论" is a topic, not an instruction
        text = text[: tail.start()].strip(" ，,。.")
    text = _TRAIL.sub("", text).strip(" ，,。.的")
    return text or plain_line(goal) or goal.strip()


def rule_queries(goal: str) -> list[str]:
    topic = topic_of(goal)
    if has_han(topic):
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
        if not findings:  # each distinct reason once, not once per query
            reasons = dict.fromkeys(f.split(": ", 1)[-1] for f in failures)
            raise ToolError(f"research_agent found nothing for {topic_of(goal)!r}: " + "; ".join(reasons), retryable=False)
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
                    queries = [plain_line(str(q)) for q in parsed if plain_line(str(q))][:3]
                    if queries:
                        return queries
                why = "the model's output is not a JSON list of queries"
            except ModelError as exc:
                why = f"the model failed ({exc})"
            await turn.emit(Error(message=f"research_agent: planning the queries failed: {why}; "
                                          "using rule-made queries", where="research_agent"))
        return rule_queries(goal)

    async def search(self, turn: Turn, task: SubAgentTask, queries: list[str], sources: list[str]) -> tuple[list[dict[str, Any]], list[str]]:
        """Per query: the knowledge base's relevant passages (only those: not what merely ranked first),
        else the web. Web searches for several queries run in parallel."""
        findings: list[dict[str, Any]] = []
        failures: list[str] = []
        web: list[tuple[int, str]] = []
        for i, q in enumerate(queries, start=1):
            if "rag_search" in sources:
                hits = await self._relevant_passages(turn, q)
                if hits:
                    await turn.emit(RagResult(query=q, hits=[h.to_event() for h in hits]))
                    findings.append({"query": q, "source": "rag_search", "content": format_passages(q, hits),
                                     "titles": list(dict.fromkeys(h.title for h in hits))})
                    await turn.emit(Step(kind="observation", content=f"{q}: rag_search answered", tool="rag_search",
                                         node_id=task.node_id))
                    continue
                failures.append(f"{q!r}: rag_search: nothing relevant in the knowledge base")
            if "search_web" in sources:
                web.append((i, q))
        if not web:
            return findings, failures
        nodes = [Node(id=f"q{i}_search_web", tool="search_web", params={"query": q}) for i, q in web]
        config = turn.services.graph_config(max_replan=0)
        run = await GraphRuntime(nodes, turn.tools, config, None, task_id=f"{task.task_id}:{task.node_id}").run()
        for i, q in web:
            node = run.nodes[f"q{i}_search_web"]
            if node.status is NodeStatus.DONE:
                findings.append({"query": q, "source": "search_web", "content": node.result})
                await turn.emit(Step(kind="observation", content=f"{q}: search_web answered", tool="search_web",
                                     node_id=task.node_id))
            else:
                failures.append(f"{q!r}: search_web {node.status.value} ({node.error})")
        return findings, failures

    @staticmethod
    async def _relevant_passages(turn: Turn, query: str) -> list[Hit]:
        """The knowledge base's passages relevant to ``query`` (calibrated threshold), best first."""
        engine = turn.services.knowledge
        if engine is None or not await turn.services.knowledge_loaded():
            return []
        from saber.agent.relevance import settings_gate

        gate = settings_gate(engine, turn.services.settings)

        def relevant() -> list[Hit]:
            return gate.relevant_hits(query, engine.search(query, 5))

        return await asyncio.to_thread(relevant)


_QUERY_PROMPT = (
    "Expand the research goal into 2 or 3 short search queries in the goal's language. "
    'Answer with a JSON array of strings only, e.g. ["query one", "query two"].'
)
_SUMMARY_PROMPT = (
    "Summarise these research findings under the headings Findings, Evidence and Open Questions, in the language "
    "of the queries. Use only what the findings say and name the source of each point; do not add facts."
)
