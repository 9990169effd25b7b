"""Language models: one small interface, an OpenAI-compatible provider, and the no-model mode."""

from saber.llm.base import ChatModel, ModelError
from saber.llm.factory import model_from_settings
from saber.llm.nomodel import (
    NO_MODEL_MESSAGE,
    NO_MODEL_NOTE,
    NO_MODEL_NOTE_ZH,
    NoModel,
    is_no_model,
    label_no_model_answer,
    no_model_note,
)
from saber.llm.openai_compat import OpenAIChatModel
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
