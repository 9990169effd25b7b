"""The no-model mode: what runs when no language model is configured.

``NoModel`` is a marker ``ChatModel`` whose every call raises ``ModelError`` — no code path can
mistake it for a model answer. Code that notices ``is_no_model(model)`` builds its answer by rules
instead and must label it with ``no_model_note(...)``, so a user never takes a rule-built answer
for a model's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from saber.language import NO_MODEL_NOTE as NO_MODEL_NOTE
from saber.language import NO_MODEL_NOTE_ZH as NO_MODEL_NOTE_ZH
from saber.language import no_model_note as no_model_note
from saber.llm.base import ChatModel, ModelError
from saber.llm.types import Completion, Message, ResponseFormat, StreamChunk
from saber.tools.base import Tool

NO_MODEL_MESSAGE = (
    "no language model is configured (set SABER_LLM_MODEL, plus SABER_LLM_BASE_URL and "
    "SABER_LLM_API_KEY for your endpoint, or [llm] model in saber.toml)"
)



class NoModel:
    """The ``ChatModel`` used when nothing is configured. It never answers."""

    name = "none"

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Tool] = (),
        response_format: ResponseFormat | None = None,
        temperature: float | None = None,
    ) -> Completion:
        raise ModelError(NO_MODEL_MESSAGE)

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Tool] = (),
        temperature: float | None = None,
    ) -> AsyncIterator[StreamChunk]:
        raise ModelError(NO_MODEL_MESSAGE)
        yield  # pragma: no cover - makes this an async generator, like every other model's stream


def is_no_model(model: ChatModel | None) -> bool:
    """True for ``None``, a ``NoModel``, or wrappers (``.wrapped``) around one."""
    seen: set[int] = set()
    current: object = model
    while current is not None and id(current) not in seen:
        if isinstance(current, NoModel):
            return True
        seen.add(id(current))
        current = getattr(current, "wrapped", None)
    return model is None


def label_no_model_answer(answer: str, *, query: str = "", language: str | None = None) -> str:
    """``answer`` followed by the note (in the query's language), unless it already carries one."""
    note = no_model_note(query or answer, language=language)
    if NO_MODEL_NOTE in answer or NO_MODEL_NOTE_ZH in answer:
        return answer
    return f"{answer.rstrip()}\n\n{note}" if answer.strip() else note
