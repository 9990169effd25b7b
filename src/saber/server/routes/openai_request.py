"""The body of ``POST /v1/chat/completions``: what Saber takes from it, refuses, or accepts and does not apply.

The last user message is the query and the user and assistant text before it the conversation.
What Saber cannot honour is refused (``check_supported``); text that is not valid Unicode is a 422
naming its message (``check_text``). The rest is accepted — clients send sampling parameters by
habit — and each field Saber does not apply is named in the ``X-Saber-Ignored`` response header
(``ignored``): sampling and output options (``temperature``, ``stop``, ``seed``, ...), unknown
fields, a ``max_tokens`` below the server's answer limit, and the messages that are not part of
the conversation Saber answers (system and developer prompts, tool results, what follows the
last user message) or their fields (``name``, ...).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from saber.jsonsafe import dumps
from saber.runs.request import HistoryTurn
from saber.server.errors import ApiError


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[ContentPart] | None = None


class StreamOptions(BaseModel):
    include_usage: bool = False


class CompletionRequest(BaseModel):
    """The OpenAI request. Sampling fields are checked against OpenAI's ranges, accepted and not
    applied (the X-Saber-Ignored response header names them)."""

    model_config = ConfigDict(extra="allow")
    model: str = Field(description="saber (routed), saber-chat, saber-tool, saber-rag or saber-react.")
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    tools: list[dict[str, Any]] | None = None
    user: str | None = Field(None, max_length=128)
    n: int | None = Field(None, ge=1, description="1 only: Saber writes one answer.")
    response_format: dict[str, Any] | None = Field(None, description='{"type": "text"} only.')
    max_tokens: int | None = Field(None, ge=1, description="Accepted; the answer is bounded by the server's "
                                   "llm.max_tokens_answer (a lower value is named in the X-Saber-Ignored header).")
    max_completion_tokens: int | None = Field(None, ge=1, description="As max_tokens.")
    temperature: float | None = Field(None, ge=0, le=2, description="0 to 2; not applied.")
    top_p: float | None = Field(None, ge=0, le=1, description="0 to 1; not applied.")
    presence_penalty: float | None = Field(None, ge=-2, le=2, description="-2 to 2; not applied.")
    frequency_penalty: float | None = Field(None, ge=-2, le=2, description="-2 to 2; not applied.")
    stop: str | list[str] | None = Field(None, description="Not applied.")


APPLIED = frozenset({"model", "messages", "stream", "stream_options", "n", "response_format", "tools",
                     "max_tokens", "max_completion_tokens"})
"""Request fields Saber applies (or refuses when it cannot): every other one is named as not applied."""

MAX_NAMED = 20
"""Fields named per group in the header; more are counted."""


def text_of(message: ChatMessage) -> str:
    if message.content is None:
        return ""
    if isinstance(message.content, str):
        return message.content
    return "".join(p.text or "" for p in message.content)


def check_supported(body: CompletionRequest) -> None:
    """Refuse (400) what Saber would otherwise drop without a word."""
    if body.n is not None and body.n > 1:
        raise ApiError(400, "unsupported", f"n: n > 1 is not supported (Saber writes one answer; {body.n} were asked)",
                       param="n")
    if body.response_format is not None and body.response_format.get("type") != "text":
        raise ApiError(400, "unsupported", f"response_format: {dumps(body.response_format)[:80]} is not supported "
                                           '(Saber answers in text: send none, or {"type": "text"})', param="response_format")
    for i, message in enumerate(body.messages):
        for j, part in enumerate(message.content if isinstance(message.content, list) else []):
            if part.type != "text":
                raise ApiError(400, "unsupported", f"messages[{i}].content[{j}]: only text content is supported "
                                                   f"(got {part.type!r})", param=f"messages[{i}].content[{j}]")


def check_text(body: CompletionRequest) -> None:
    """A 422 naming the message whose text holds a lone surrogate (it could be neither stored nor sent)."""
    for i, message in enumerate(body.messages):
        if isinstance(message.content, list):
            texts = [(f"messages[{i}].content[{j}].text", p.text or "") for j, p in enumerate(message.content)]
        else:
            texts = [(f"messages[{i}].content", message.content or "")]
        for where, text in texts:
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise ApiError(422, "invalid_request", f"{where}: not valid Unicode text: a lone surrogate at "
                                                       f"position {exc.start}", param=where) from None


def last_user(body: CompletionRequest) -> int:
    """The index of the message to answer: the last user message."""
    last = next((i for i in range(len(body.messages) - 1, -1, -1) if body.messages[i].role == "user"), None)
    if last is None:
        raise ApiError(422, "invalid_request", "messages: no user message to answer", param="messages")
    return last


def split(body: CompletionRequest) -> tuple[str, list[HistoryTurn]]:
    """The query (the last user message) and the conversation before it (its user and assistant text)."""
    last = last_user(body)
    history: list[HistoryTurn] = []
    for m in body.messages[:last]:
        if m.role == "user":
            history.append(HistoryTurn(role="user", content=text_of(m)))
        elif m.role == "assistant" and text_of(m):
            history.append(HistoryTurn(role="assistant", content=text_of(m)))
    return text_of(body.messages[last]), history


def ignored(body: CompletionRequest, answer_max_tokens: int) -> str | None:
    """The ``X-Saber-Ignored`` header: each accepted field that is not applied, in groups by why."""
    notes = [note for note in (_lower_limit(body, answer_max_tokens),
                               _group(_options(body), "not applied (Saber's models run with the server's settings)"),
                               _group(_message_fields(body), "not passed to the model (Saber writes its own system "
                                                             "prompt; the conversation is the user and assistant text)"))
             if note]
    return "; ".join(notes) or None


def _lower_limit(body: CompletionRequest, answer_max_tokens: int) -> str | None:
    """A ``max_tokens`` below the server's answer limit: clients send one by habit, so it is not
    refused, but the answer is bounded by the server's."""
    for name in ("max_tokens", "max_completion_tokens"):
        value = getattr(body, name)
        if value is not None and value < answer_max_tokens:
            return f"{name}={value}: answers are bounded by llm.max_tokens_answer={answer_max_tokens}"
    return None


def _options(body: CompletionRequest) -> list[str]:
    declared = [name for name in type(body).model_fields if name in body.model_fields_set]
    sent = {**{name: getattr(body, name) for name in declared}, **(body.model_extra or {})}
    return [name for name, value in sent.items() if name not in APPLIED and value is not None]


def _message_fields(body: CompletionRequest) -> list[str]:
    last = last_user(body)
    names: list[str] = []
    for i, message in enumerate(body.messages):
        if i > last:
            names.append(f"messages[{i}] (after the last user message)")
        elif message.role in ("system", "developer", "tool"):
            names.append(f"messages[{i}] ({message.role})")
        elif message.role == "assistant" and not text_of(message):
            names.append(f"messages[{i}] (assistant, no text)")
        else:
            names += [f"messages[{i}].{key}" for key, value in (message.model_extra or {}).items() if value is not None]
    return names


def _group(names: list[str], why: str) -> str | None:
    if not names:
        return None
    shown = [re.sub(r"[^\x20-\x7e]", "?", name)[:80] for name in names[:MAX_NAMED]]  # a header holds ASCII only
    more = f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else ""
    return f"{', '.join(shown)}{more}: {why}"
