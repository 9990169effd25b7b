"""Saber: an agent runtime that lets language models use tools."""

from typing import TYPE_CHECKING

from saber._lazy import lazy_exports

if TYPE_CHECKING:
    from saber.agent import Agent, Answer
    from saber.agent.memory import MemoryService
    from saber.config import ConfigError, Settings
    from saber.events import Event, EventBus
    from saber.graph import GraphConfig, GraphRuntime, Node, NodeStatus, RunResult, TaskGraph
    from saber.llm import ChatModel, Message, ModelError, OpenAIChatModel
    from saber.rag import RagEngine
    from saber.tools import Param, Tool, ToolArgumentError, ToolError, ToolRegistry, tool

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "Answer",
    "ChatModel",
    "ConfigError",
    "Event",
    "EventBus",
    "GraphConfig",
    "GraphRuntime",
    "MemoryService",
    "Message",
    "ModelError",
    "Node",
    "NodeStatus",
    "OpenAIChatModel",
    "Param",
    "RagEngine",
    "RunResult",
    "Settings",
    "TaskGraph",
    "Tool",
    "ToolArgumentError",
    "ToolError",
    "ToolRegistry",
    "__version__",
    "tool",
]

_HOMES = {
    "Agent": "saber.agent", "Answer": "saber.agent",
    "MemoryService": "saber.agent.memory",
    "ConfigError": "saber.config", "Settings": "saber.config",
    "Event": "saber.events", "EventBus": "saber.events",
    "GraphConfig": "saber.graph", "GraphRuntime": "saber.graph", "Node": "saber.graph", "NodeStatus": "saber.graph",
    "RunResult": "saber.graph", "TaskGraph": "saber.graph",
    "ChatModel": "saber.llm", "Message": "saber.llm", "ModelError": "saber.llm", "OpenAIChatModel": "saber.llm",
    "RagEngine": "saber.rag",
    "Param": "saber.tools", "Tool": "saber.tools", "ToolArgumentError": "saber.tools", "ToolError": "saber.tools",
    "ToolRegistry": "saber.tools", "tool": "saber.tools",
}

"""Every public name is imported on first use, so ``import saber.cli`` (and ``saber --help``)
does not pay for the graph runtime, HTTP clients, the knowledge base or the embedding model."""

__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__)
