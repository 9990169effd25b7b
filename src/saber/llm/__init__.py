"""Language models: one small interface, an OpenAI-compatible provider, and the no-model mode."""

from typing import TYPE_CHECKING, Any

from saber.llm.base import ChatModel, ModelError
from saber.llm.nomodel import (
    NO_MODEL_MESSAGE,
    NO_MODEL_NOTE,
    NO_MODEL_NOTE_ZH,
    NoModel,
    is_no_model,
    label_no_model_answer,
    no_model_note,
)
from saber.llm.retry import RetryingModel
from saber.llm.toolcalls import ToolCallAccumulator, parse_arguments, tool_calls_from_openai
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
    "NO_MODEL_MESSAGE",
    "NO_MODEL_NOTE",
    "NO_MODEL_NOTE_ZH",
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
    "ToolCallAccumulator",
    "ToolCallDelta",
    "Usage",
    "is_no_model",
    "label_no_model_answer",
    "model_from_settings",
    "no_model_note",
    "parse_arguments",
    "tool_calls_from_openai",
]


def __getattr__(name: str) -> Any:
    """The OpenAI client (a large import) loads only when a model is used, not for rule mode."""
    if name == "OpenAIChatModel":
        from saber.llm.openai_compat import OpenAIChatModel

        return OpenAIChatModel
    if name == "model_from_settings":
        from saber.llm.factory import model_from_settings

        return model_from_settings
    raise AttributeError(f"module 'saber.llm' has no attribute {name!r}")
