"""Writing the answer: stream a model's tokens as events, or say plainly that no model wrote it."""

from __future__ import annotations

from collections.abc import Sequence

from saber.agent.context import Turn
from saber.events import Error, Token
from saber.llm.base import ModelError
from saber.llm.nomodel import NO_MODEL_NOTE, NO_MODEL_NOTE_ZH
from saber.llm.types import Message, StreamEnd, TextDelta


def no_model_note(turn: Turn) -> str:
    return NO_MODEL_NOTE_ZH if turn.lang == "zh" else NO_MODEL_NOTE


def model_failed_note(turn: Turn, error: Exception) -> str:
    if turn.lang == "zh":
        return f"注：语言模型调用失败（{error}），以下内容由规则根据结果整理，并非模型生成。"
    return f"Note: the language model call failed ({error}); what follows was assembled by rules from the results, not written by a model."


async def stream_answer(turn: Turn, messages: Sequence[Message], *, fallback: str, where: str, label: bool = True) -> str:
    """Stream the model's answer as ``token`` events and return it.

    Without a model, or when the model fails before saying anything, the ``fallback`` text
    (built by rules from what the request found) is returned, labelled as not written by a model.
    A failure after some tokens keeps what was streamed and says the answer was cut. ``label``
    False leaves out the no-model note when ``fallback`` already says that no model is configured.
    """
    if not turn.has_model:
        return await _emit_text(turn, f"{fallback}\n\n{no_model_note(turn)}" if label else fallback)
    parts: list[str] = []
    try:
        async for chunk in turn.model.stream(messages):
            if isinstance(chunk, TextDelta) and chunk.content:
                parts.append(chunk.content)
                await turn.emit(Token(content=chunk.content))
            elif isinstance(chunk, StreamEnd):
                turn.add_usage(chunk.usage)
    except ModelError as exc:
        await turn.emit(Error(message=str(exc), where=where))
        if parts:
            cut = "\n\n（回答被中断：语言模型调用失败）" if turn.lang == "zh" else "\n\n(The answer was cut off: the language model call failed.)"
            return "".join(parts) + await _emit_text(turn, cut)
        return await _emit_text(turn, f"{model_failed_note(turn, exc)}\n\n{fallback}" if fallback else _failed_only(turn, exc))
    turn.answered_by_model = True
    return "".join(parts)


def _failed_only(turn: Turn, error: Exception) -> str:
    if turn.lang == "zh":
        return f"抱歉，语言模型调用失败，无法回答：{error}"
    return f"Sorry, the language model call failed, so there is no answer: {error}"


async def _emit_text(turn: Turn, text: str) -> str:
    await turn.emit(Token(content=text))
    return text
