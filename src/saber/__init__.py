"""Saber: an agent runtime that lets language models use tools."""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from saber.agent import Agent
    from saber.config import ConfigError, Settings
    from saber.events import Event, EventBus
    from saber.graph import Node, NodeStatus, TaskGraph
    from saber.tools import Param, Tool, ToolArgumentError, ToolError, ToolRegistry, tool

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

_HOMES = {
    "Agent": "saber.agent",
    "ConfigError": "saber.config", "Settings": "saber.config",
    "Event": "saber.events", "EventBus": "saber.events",
    "Node": "saber.graph", "NodeStatus": "saber.graph", "TaskGraph": "saber.graph",
    "Param": "saber.tools", "Tool": "saber.tools", "ToolArgumentError": "saber.tools", "ToolError": "saber.tools",
    "ToolRegistry": "saber.tools", "tool": "saber.tools",
}


def __getattr__(name: str) -> Any:
    """Every public name is imported on first use, so ``import saber.cli`` (and ``saber --help``)
    does not pay for the graph runtime, HTTP clients, the knowledge base or the embedding model."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'saber' has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
