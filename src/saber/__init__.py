"""Saber: an agent runtime that lets language models use tools."""

from saber.config import ConfigError, Settings
from saber.events import Event, EventBus
from saber.graph import Node, NodeStatus, TaskGraph
from saber.tools import Param, Tool, ToolArgumentError, ToolError, ToolRegistry, tool

__version__ = "0.1.0"

__all__ = [
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
