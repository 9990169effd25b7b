"""Saber: an agent runtime that lets language models use tools."""

from typing import TYPE_CHECKING, Any

from saber.config import ConfigError, Settings
from saber.events import Event, EventBus
from saber.graph import Node, NodeStatus, TaskGraph
from saber.tools import Param, Tool, ToolArgumentError, ToolError, ToolRegistry, tool

if TYPE_CHECKING:
    from saber.agent import Agent

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "ConfigError",
    "Event",
    "EventBus",
    "Node",
    "NodeStatus",
    "Param",
    "Settings",
    "TaskGraph",
    "Tool",
    "ToolArgumentError",
    "ToolError",
    "ToolRegistry",
    "__version__",
    "tool",
]


def __getattr__(name: str) -> Any:
    """``saber.Agent`` is imported on first use: the agent pulls in the knowledge base and the
    embedding model, which ``import saber`` alone should not pay for."""
    if name == "Agent":
        from saber.agent import Agent

        return Agent
    raise AttributeError(f"module 'saber' has no attribute {name!r}")
