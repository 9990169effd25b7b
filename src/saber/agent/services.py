"""What every request of one Agent shares: settings, tools, knowledge base, memory, checkpoints."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from saber.config import Settings
from saber.config.graph import GraphConfig
from saber.events import EventBus
from saber.graph.agents import SubAgent
from saber.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from saber.agent.memory import MemoryService
    from saber.graph.checkpoint import CheckpointStore
    from saber.rag.engine import RagEngine
    from saber.tools.index import ToolIndex


class SubAgentSpec(Protocol):
    """What ``Services.sub_agents`` holds (``SubAgentBase`` is one): a named sub-agent the planner
    may call, tied to one request by ``bind``. A protocol, so this module does not import the
    sub-agents, which import the request's ``Turn``, which refers to ``Services``."""

    @property
    def description(self) -> str: ...

    def bind(self, turn: Any) -> SubAgent: ...


@dataclass(kw_only=True)
class Services:
    """What every request of one Agent shares: settings, tools, event bus, knowledge base,
    memory, checkpoint store, sub-agents and the tool index."""

    settings: Settings
    registry: ToolRegistry
    bus: EventBus
    knowledge: RagEngine | None = None
    memory: MemoryService | None = None
    checkpoints: CheckpointStore | None = None
    sub_agents: Mapping[str, SubAgentSpec] = field(default_factory=dict)
    tool_index: ToolIndex | None = None
    """Ranks tools for routing and for the planner prompt when there are many (MCP) tools."""

    async def knowledge_loaded(self) -> bool:
        """Asks the store (a query: in a worker thread, not on the event loop)."""
        knowledge = self.knowledge
        return knowledge is not None and await asyncio.to_thread(lambda: knowledge.loaded)

    def graph_config(self, **overrides: object) -> GraphConfig:
        """``GraphConfig.from_settings(self.settings, **overrides)``."""
        return GraphConfig.from_settings(self.settings, **overrides)

    def agent_descriptions(self) -> Mapping[str, str]:
        """``name → description`` of the sub-agents, read when first looked at: a request that never
        plans does not import the built-in sub-agents."""
        return _Descriptions(self.sub_agents)


class _Descriptions(Mapping[str, str]):
    def __init__(self, agents: Mapping[str, SubAgentSpec]) -> None:
        self._agents = agents

    def __getitem__(self, name: str) -> str:
        return self._agents[name].description

    def __iter__(self) -> Iterator[str]:
        return iter(self._agents)

    def __len__(self) -> int:
        return len(self._agents)
