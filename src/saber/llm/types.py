"""The wire-neutral types every model speaks: messages, tool calls, completions, stream chunks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCall:
    """One call a model asked for, whatever shape it arrived in."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True, slots=True)
class Message:
    """One chat message in OpenAI's shape: ``role`` (system, user, assistant, tool), its text, the
    tool calls an assistant made, and for a tool reply the ``tool_call_id`` it answers."""

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    @classmethod
    def system(cls, content: str) -> Message:
        return cls(role="system", content=content)

    @classmethod
    def user(cls, content: str) -> Message:
        return cls(role="user", content=content)

    @classmethod
    def assistant(cls, content: str, tool_calls: tuple[ToolCall, ...] = ()) -> Message:
        return cls(role="assistant", content=content, tool_calls=tool_calls)


@dataclass(frozen=True, kw_only=True, slots=True)
class Usage:
    """Tokens a model call used, as the endpoint reported them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
        )

    def to_dict(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens, "total_tokens": self.total_tokens}


@dataclass(frozen=True, kw_only=True, slots=True)
class Completion:
    """A whole model reply: its text, the tool calls it made, token usage, why it stopped and the
    model that answered."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    model: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class TextDelta:
    """A piece of streamed answer text."""

    type: Literal["text"] = "text"
    content: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallDelta:
    """A fragment of a streamed tool call; fragments with the same ``index`` belong together."""

    type: Literal["tool_call"] = "tool_call"
    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class StreamEnd:
    """The last chunk: the assembled tool calls, the usage and why the model stopped."""

    type: Literal["end"] = "end"
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    cut: str | None = None
    """Why Saber cut the stream short (time limit, token limit, a repetition loop); None if it ended on its own."""


StreamChunk: TypeAlias = TextDelta | ToolCallDelta | StreamEnd


@dataclass(frozen=True, kw_only=True, slots=True)
class ResponseFormat:
    """Ask for JSON that fits ``schema`` (OpenAI ``response_format`` json_schema) where supported."""

    name: str
    schema: dict[str, Any]
    strict: bool = False
