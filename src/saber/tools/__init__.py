"""Tools: what a model can ask the system to do."""

from saber.tools.base import Param, Tool, tool
from saber.tools.errors import ToolArgumentError, ToolError, UnknownToolError
from saber.tools.registry import ToolRegistry

__all__ = ["Param", "Tool", "ToolArgumentError", "ToolError", "ToolRegistry", "UnknownToolError", "tool"]
