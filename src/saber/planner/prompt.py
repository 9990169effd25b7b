"""The planner prompt: rules, compact tool cards, sub-agents, one worked example, "JSON only".

Kept short on purpose (it is paid on every plan): a card is one line of name, parameters and
the description's first sentence; the example leaves out the fields that have defaults (type
"tool", no dependencies, no race group), and a placeholder (``$n1``) is the dependency: the
shorter the plan, the sooner its last node starts. A plan whose reply only states the results
may end with that reply as a template (``{"answer": "… $n1 …"}``, see ``answer_template``), so
no model call is needed after the tools. ``saber.planner.preselect`` decides which tools and
sub-agents the agent lists.

Chinese or English by the query's language. The user's preferences (city, timezone …) and the
recent turns go into the user message as context, so the model fills arguments the user did
not repeat ("天气怎么样" from a user whose city is 北京).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from saber.language import Lang, language_of
from saber.llm.types import Message
from saber.tools.base import Tool

Language = Lang
detect_language = language_of
"""The query's language (``saber.language.language_of``): the one rule the agent uses too."""

_RULES = {
    "zh": """你是任务规划器。把用户的问题写成执行计划（JSON 数组），每个元素是一个节点：
{"id":"n1","tool":"工具名","params":{...}}；子 Agent 节点写 {"id":"n2","type":"sub_agent","agent":"名字","goal":"..."}。
- 只用下面列出的工具和子 Agent；必填参数不能缺
- 参数里用 "$n1" 表示 n1 的结果（该节点在 n1 之后执行，不必写 depends_on）；互不依赖的节点并行执行
- 可互相替代的来源（网页搜索和知识库检索）设相同的 "race_group":"search"
- 回答只需复述结果（查询，不必比较、总结或判断）时，末尾加 {"answer":"…$n1…"}：写好的回答，结果用占位符
- 不需要工具就输出 []
只输出 JSON，不要解释，不要代码块。""",
    "en": """You are a task planner. Write the user's request as an execution plan: a JSON array of nodes,
{"id":"n1","tool":"tool_name","params":{...}}; a sub-agent node is {"id":"n2","type":"sub_agent","agent":"name","goal":"..."}.
- Use only the tools and sub-agents listed below; give every required param
- "$n1" in params stands for n1's result (that node runs after n1, no "depends_on" needed); independent nodes run in parallel
- Interchangeable sources (web search and the knowledge base) share "race_group":"search"
- If the reply only states the results (a lookup: no comparing, summarising or judging), end the array with {"answer":"… $n1 …"}: the reply, each result as its placeholder
- If no tool is needed, output []
Output JSON only: no explanation, no Markdown code fence.""",
}

_EXAMPLE = {
    "zh": """示例（仅格式）：“查上海的天气，再搜索 K8s service 有几种类型”
[{"id":"n1","tool":"get_weather","params":{"city":"上海"}},{"id":"n2","tool":"search_web","params":{"query":"K8s service 类型"},"race_group":"search"},{"id":"n3","tool":"rag_search","params":{"query":"K8s service 类型"},"race_group":"search"}]""",
    "en": """Example (format only) — request: "weather in Shanghai, and search what types of K8s services exist"
[{"id":"n1","tool":"get_weather","params":{"city":"Shanghai"}},{"id":"n2","tool":"search_web","params":{"query":"K8s service types"},"race_group":"search"},{"id":"n3","tool":"rag_search","params":{"query":"K8s service types"},"race_group":"search"}]""",
}

_WORDS = {
    "zh": {"tools": "可用工具：", "agents": "可用子 Agent：", "none": "（无）",
           "prefs": "用户偏好：", "history": "最近的对话：", "query": "用户问题：", "out": "请输出 JSON 计划："},
    "en": {"tools": "Tools:", "agents": "Sub-agents:", "none": "(none)",
           "prefs": "User preferences:", "history": "Recent conversation:", "query": "Request: ", "out": "The JSON plan:"},
}

_SENTENCE_END = re.compile(r"(?<=[.。!?！？])\s|(?<=[。！？])")
MAX_CARD_CHARS = 100
"""A tool's description in its card is cut to about this many characters (at a word)."""


def _summary(description: str, limit: int = MAX_CARD_CHARS) -> str:
    """The first sentence of a description, an unclosed parenthesis dropped, cut at a word."""
    lines = description.strip().splitlines()
    text = _SENTENCE_END.split(lines[0] if lines else "", maxsplit=1)[0].strip()
    if text.count("(") > text.count(")"):
        text = text[: text.rfind("(")].rstrip(" :,;")
    if len(text) > limit:
        cut = text[:limit].rsplit(" ", 1)[0] if " " in text[:limit] else text[:limit]
        text = cut.rstrip(" ,;:") + "…"
    return text


def tool_card(tool: Tool) -> str:
    """A compact card: ``- get_weather(city, days=3, unit: c|f): Weather for a city.``

    A required parameter is its bare name, typed when it is not a string; an optional one shows
    its default (or ``?``); an enum lists its values."""
    params = []
    for p in tool.parameters:
        if p.enum:
            params.append(f"{p.name}: {'|'.join(str(e) for e in p.enum)}")
        elif p.has_default and p.default is not None:
            params.append(f"{p.name}={json.dumps(p.default, ensure_ascii=False)}")
        elif not p.required:
            params.append(f"{p.name}?")
        else:
            params.append(p.name if p.type == "string" else f"{p.name}: {p.type}")
    summary = _summary(tool.description)
    return f"- {tool.name}({', '.join(params)})" + (f": {summary}" if summary else "")


def build_planner_prompt(
    query: str,
    tools: Mapping[str, Tool],
    *,
    agents: Mapping[str, str] | None = None,
    preferences: Mapping[str, Any] | None = None,
    history: Sequence[Message] = (),
    language: Language | None = None,
    max_history: int = 6,
) -> list[Message]:
    """``[system, user]`` messages asking for a plan of ``query``."""
    lang = language or detect_language(query)
    w = _WORDS[lang]
    tool_lines = [tool_card(t) for t in tools.values()] or [w["none"]]
    sections = [_RULES[lang], w["tools"] + "\n" + "\n".join(tool_lines)]
    if agents:  # no sub-agent section at all when none is offered
        sections.append(w["agents"] + "\n" + "\n".join(f"- {name}: {_summary(desc, 160)}" for name, desc in agents.items()))
    system = "\n\n".join([*sections, _EXAMPLE[lang]])
    parts: list[str] = []
    prefs = {k: v for k, v in (preferences or {}).items() if v not in (None, "")}
    if prefs:
        parts.append(w["prefs"] + "\n" + "\n".join(f"- {k}: {v}" for k, v in prefs.items()))
    turns = [m for m in history if m.role in ("user", "assistant") and m.content.strip()][-max_history:]
    if turns:
        parts.append(w["history"] + "\n" + "\n".join(f"{m.role}: {_clip(m.content)}" for m in turns))
    parts.append(f"{w['query']}{query}\n{w['out']}")
    return [Message.system(system), Message.user("\n\n".join(parts))]


def _clip(text: str, limit: int = 400) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
