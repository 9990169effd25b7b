"""The interface every sub-agent has, and helpers they share."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

from saber.agent.context import Turn
from saber.graph.agents import SubAgentTask
from saber.llm.base import ModelError
from saber.llm.types import Message


class SubAgentBase(ABC):
    """A named step the planner can use like a tool. ``bind`` ties it to one request."""

    name: ClassVar[str]
    description: ClassVar[str]

    @abstractmethod
    async def run(self, turn: Turn, task: SubAgentTask) -> Any: ...

    def bind(self, turn: Turn) -> BoundSubAgent:
        return BoundSubAgent(self, turn)


class BoundSubAgent:
    """What the graph runtime calls: ``await agent.run(task)``."""

    def __init__(self, agent: SubAgentBase, turn: Turn) -> None:
        self.agent = agent
        self.turn = turn

    async def run(self, task: SubAgentTask) -> Any:
        return await self.agent.run(self.turn, task)


async def ask_model(turn: Turn, system: str, user: str) -> str:
    """One model call; its usage is counted on the request. Raises ModelError."""
    completion = await turn.model.complete([Message.system(system), Message.user(user)])
    turn.add_usage(completion.usage)
    text = completion.text.strip()
    if not text:
        raise ModelError("the model returned an empty answer")
    return text


def upstream_of(task: SubAgentTask, agent: str) -> Any:
    """The result of the upstream node that ran ``agent`` (keys look like ``"n1:research_agent"``)."""
    for key, value in task.upstream.items():
        if key.split(":", 1)[-1] == agent:
            return value
    return None


def upstream_text(upstream: Mapping[str, Any]) -> str:
    """Every upstream result as one text block, each under its node label."""
    from saber.agent.observations import as_text

    return "\n\n".join(f"## {key}\n{as_text(value, 8000)}" for key, value in upstream.items())
