"""Language models: one small interface, an OpenAI-compatible provider, and the no-model mode."""

from typing import TYPE_CHECKING, Any

from saber.llm.base import ChatModel, ModelError
from saber.llm.nomodel import NoModel
from saber.llm.retry import RetryingModel
from saber.llm.types import (
    Completion,
    Message,
    ResponseFormat,
    StreamChunk,
    StreamEnd,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)

if TYPE_CHECKING:
    from saber.llm.factory import model_from_settings
    from saber.llm.openai_compat import OpenAIChatModel

__all__ = [
    "ChatModel",
    "Completion",
    "Message",
    "ModelError",
    "NoModel",
    "OpenAIChatModel",
    "ResponseFormat",
    "RetryingModel",
    "StreamChunk",
    "StreamEnd",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "Usage",
    "model_from_settings",
]
"""The public names. The no-model notes and tool-call parsing helpers are internal: import them
from ``saber.llm.nomodel`` and ``saber.llm.toolcalls``."""


def __getattr__(name: str) -> Any:
    """The OpenAI client (a large import) loads only when a model is used, not for rule mode."""
    if name == "OpenAIChatModel":
        from saber.llm.openai_compat import OpenAIChatModel

        return OpenAIChatModel
    if name == "model_from_settings":
        from saber.llm.factory import model_from_settings

        return model_from_settings
    raise AttributeError(f"module 'saber.llm' has no attribute {name!r}")
