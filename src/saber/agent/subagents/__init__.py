"""Sub-agents: nodes of type ``sub_agent`` in a task graph, each a small class with one interface."""

from saber.agent.subagents.base import SubAgentBase
from saber.agent.subagents.doc import DocAgent
from saber.agent.subagents.research import ResearchAgent
from saber.agent.subagents.review import ReviewAgent
from saber.agent.subagents.writer import WriterAgent


def default_sub_agents() -> dict[str, SubAgentBase]:
    agents: list[SubAgentBase] = [ResearchAgent(), WriterAgent(), ReviewAgent(), DocAgent()]
    return {a.name: a for a in agents}


__all__ = ["DocAgent", "ResearchAgent", "ReviewAgent", "SubAgentBase", "WriterAgent", "default_sub_agents"]
