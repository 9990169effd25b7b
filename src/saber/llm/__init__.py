"""Language models: one small interface, an OpenAI-compatible provider, and the no-model mode."""

from saber.llm.base import ChatModel, ModelError
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

__all__ = [
    "ChatModel", "Completion", "Message", "ModelError", "ResponseFormat", "StreamChunk", "StreamEnd",
    "TextDelta", "ToolCall", "ToolCallDelta", "Usage",
]
