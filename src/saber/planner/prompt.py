"""The planner prompt: tools, sub-agents, rules, one worked example, "JSON only".

Chinese or English by the query's language. The user's preferences (city, timezone …) and the
recent turns go into the user message as context, so the model fills arguments the user did
not repeat ("天气怎么样" from a user whose city is 北京).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from saber.language import Lang, language_of
from saber.llm.types import Message
from saber.tools.base import Tool

Language = Lang
detect_language = language_of
"""The query's language (``saber.language.language_of``): the one rule the agent uses too."""

_RULES = {
    "zh": """你是一个任务规划器。根据用户的问题，输出一个 JSON 数组形式的执行计划（任务图）。
规则：
- 每个节点一个唯一 id：n1, n2, n3 ...
- type 只能是 "tool" 或 "sub_agent"；tool 节点写 tool 和 params，sub_agent 节点写 agent 和 goal
- params 必须符合工具的参数说明，必填参数不能缺
- 如果节点 B 需要节点 A 的输出，B 的 depends_on 包含 A 的 id，参数里可以用 "$n1" 表示 n1 的结果
- 功能可以互相替代的来源（如网页搜索和知识库检索）设相同的 race_group，例如 "search"；其他节点 race_group 为 null
- 只使用下面列出的工具和子 Agent
- 如果不需要任何工具就能回答，输出 []
只输出 JSON，不要任何解释、不要 Markdown 代码块。""",
    "en": """You are a task planner. Answer the user's request with an execution plan: a JSON array of nodes (a task graph).
Rules:
- Give every node a unique id: n1, n2, n3 ...
- type is "tool" or "sub_agent"; a tool node has tool and params, a sub_agent node has agent and goal
- params must follow the tool's parameters; never leave out a required one
- If node B needs node A's output, B's depends_on lists A's id, and B's params may use "$n1" for n1's result
- Interchangeable sources (web search and the knowledge base) share a race_group such as "search"; otherwise race_group is null
- Use only the tools and sub-agents listed below
- If no tool is needed to answer, output []
Output JSON only: no explanation, no Markdown code fence.""",
}

_EXAMPLE = {
    "zh": """示例（只演示格式，工具以上面的列表为准）—— 问题：“查一下上海的天气，再搜索 K8s service 有几种类型”
[{"id":"n1","type":"tool","tool":"get_weather","params":{"city":"上海"},"depends_on":[],"race_group":null},
 {"id":"n2","type":"tool","tool":"search_web","params":{"query":"K8s service 类型"},"depends_on":[],"race_group":"search"},
 {"id":"n3","type":"tool","tool":"rag_search","params":{"query":"K8s service 类型"},"depends_on":[],"race_group":"search"}]""",
    "en": """Example (format only; use the tools listed above) — request: "weather in Shanghai, and search what types of K8s services exist"
[{"id":"n1","type":"tool","tool":"get_weather","params":{"city":"Shanghai"},"depends_on":[],"race_group":null},
 {"id":"n2","type":"tool","tool":"search_web","params":{"query":"K8s service types"},"depends_on":[],"race_group":"search"},
 {"id":"n3","type":"tool","tool":"rag_search","params":{"query":"K8s service types"},"depends_on":[],"race_group":"search"}]""",
}

_WORDS = {
    "zh": {"tools": "可用工具：", "agents": "可用子 Agent：", "none": "（无）", "params": "参数",
           "prefs": "用户偏好：", "history": "最近的对话：", "query": "用户问题：", "out": "请输出 JSON 计划："},
    "en": {"tools": "Tools:", "agents": "Sub-agents:", "none": "(none)", "params": "params",
           "prefs": "User preferences:", "history": "Recent conversation:", "query": "Request:", "out": "The JSON plan:"},
}


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
    tool_lines = [t.to_prompt_line(params_word=w["params"]) for t in tools.values()] or [w["none"]]
    agent_lines = [f"- {name}: {desc}" for name, desc in (agents or {}).items()] or [w["none"]]
    system = "\n\n".join([
        _RULES[lang],
        w["tools"] + "\n" + "\n".join(tool_lines),
        w["agents"] + "\n" + "\n".join(agent_lines),
        _EXAMPLE[lang],
    ])
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
