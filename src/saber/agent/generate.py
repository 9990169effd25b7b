"""Writing the answer: stream a model's tokens as events, or say plainly that no model (or no usable
model answer) wrote it."""

from __future__ import annotations

from collections.abc import Sequence

from saber.agent.answer_check import generation_failure
from saber.agent.context import Turn
from saber.events import Error, Token
from saber.graph.node import Node
from saber.language import no_model_note as language_note
from saber.llm.base import ModelError
from saber.llm.guarded import as_model_error
from saber.llm.types import Message, StreamEnd, TextDelta


def no_model_note(turn: Turn) -> str:
    """The no-model note in the turn's language (``saber.language.no_model_note``)."""
    return language_note(language=turn.lang)


def model_failed_note(turn: Turn, error: Exception) -> str:
    if turn.lang == "zh":
        return f"注：语言模型调用失败（{error}），以下内容由规则根据结果整理，并非模型生成。"
    return f"Note: the language model call failed ({error}); what follows was assembled by rules from the results, not written by a model."


async def stream_answer(turn: Turn, messages: Sequence[Message], *, fallback: str, where: str, label: bool = True) -> str:
    """Stream the model's answer as ``token`` events and return it.

    Without a model, or when the model fails before saying anything, the ``fallback`` text
    (built by rules from what the request found) is returned, labelled as not written by a model.
    A generation that failed — empty, cut (by a limit, a repetition loop or an error after some
    tokens) or the prompt echoed back — is never returned as the answer: an ``error`` event says
    why, and the answer is the ``fallback`` with a note (or, in chat, where there is no fallback,
    what was written followed by the reason it was cut). ``label`` False leaves out the no-model
    note when ``fallback`` already says that no model is configured.
    """
    if not turn.has_model:
        return await _emit_text(turn, f"{fallback}\n\n{no_model_note(turn)}" if label else fallback)
    parts: list[str] = []
    end: StreamEnd | None = None
    try:
        async for chunk in turn.model.stream(messages):
            if isinstance(chunk, TextDelta) and chunk.content:
                parts.append(chunk.content)
                await turn.emit(Token(content=chunk.content))
            elif isinstance(chunk, StreamEnd):
                end = chunk
                turn.add_usage(chunk.usage)
    except Exception as exc:  # a model not wrapped in GuardedModel can raise anything
        exc = exc if isinstance(exc, ModelError) else as_model_error(turn.model.name, exc)
        await turn.emit(Error(message=str(exc), where=where))
        if parts:
            return await _unusable(turn, "".join(parts), f"the language model call failed: {exc}", fallback)
        return await _emit_text(turn, f"{model_failed_note(turn, exc)}\n\n{fallback}" if fallback else _failed_only(turn, exc))
    text = "".join(parts)
    failure = generation_failure(text, messages, end)
    if failure is not None:
        await turn.emit(Error(message=f"the model's answer was not usable: {failure}", where=where))
        return await _unusable(turn, text, failure, fallback)
    turn.answered_by_model = True
    return text


async def _unusable(turn: Turn, text: str, why: str, fallback: str) -> str:
    """The answer after a failed generation: the rule-built ``fallback`` with a note; in chat
    (no fallback) what the model wrote, saying it was cut, or an apology when it wrote nothing."""
    sep = "\n\n" if text.strip() else ""
    if fallback:
        if turn.lang == "zh":
            note = f"注：语言模型的回答不可用（{why}），以下内容由规则根据结果整理，并非模型生成。"
        else:
            note = f"Note: the language model's answer was not usable ({why}); what follows was assembled by rules from the results, not written by a model."
        answer = f"{note}\n\n{fallback}"
        await _emit_text(turn, sep + answer)
        return answer
    if not text.strip():
        return await _emit_text(turn, f"抱歉，语言模型没有给出回答（{why}）。" if turn.lang == "zh" else f"Sorry, the language model gave no answer ({why}).")
    cut = f"（回答被截断：{why}）" if turn.lang == "zh" else f"(The answer was cut: {why}.)"
    await _emit_text(turn, sep + cut)
    turn.answered_by_model = True  # what is kept is the model's own text, labelled as cut
    return text.rstrip() + "\n\n" + cut


def _failed_only(turn: Turn, error: Exception) -> str:
    if turn.lang == "zh":
        return f"抱歉，语言模型调用失败，无法回答：{error}"
    return f"Sorry, the language model call failed, so there is no answer: {error}"


async def _emit_text(turn: Turn, text: str) -> str:
    await turn.emit(Token(content=text))
    return text


async def with_failed_steps(turn: Turn, answer: str, nodes: Sequence[Node]) -> str:
    """``answer``, and when a model wrote it without owning up to a failed step, a last line naming
    the steps that failed (streamed as a token): an answer never hides a failure. A rule answer
    names them already."""
    if not turn.answered_by_model:
        return answer
    from saber.agent.render import failed_steps_note

    note = failed_steps_note(nodes, turn.lang, answer)
    if note:
        await turn.emit(Token(content=note))
    return answer + note
