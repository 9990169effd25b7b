"""What a streamed ``/v1/chat/completions`` sends: the answer's text once, whatever happened to it.

The agent streams ``token`` events as the answer is written, and its ``done`` carries the final
answer. The two agree except in a few ways, each of which is sent as the text it adds, never as
a second copy of the answer:

- the final answer continues what was streamed, perhaps with different whitespace (a cut answer is
  stored with its trailing spaces trimmed; a deadline note follows the trimmed text): only the rest;
- Saber rejected what the model wrote and replaced it: the ``error`` event that says so is followed
  by a separator and the replacement as tokens, and the answer is that replacement — already sent;
- the answer was cut to ``max_answer_chars`` after it streamed: only its last line (the note);
- the chat model failed and Saber has no rule answer: nothing of the apology is sent, the stream
  ends with an OpenAI error event (``model_failure``).

In the distributed mode the worker writing the answer may die: another takes the run over and
writes the answer again, after a ``start`` that says ``restarted`` (``CompletionText``). The client
holds what the dead attempt sent, and a stream cannot take text back: of the new attempt's text,
only what continues that is sent; an answer that does not continue it ends the stream with an
OpenAI error event (``ANSWER_RESTARTED``) naming where the whole answer is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from saber.runs.eventlog import LoggedEvent

FAILED_CHAT_WHERE = "chat"
"""The ``where`` of the ``error`` event of a chat answer whose model failed (``saber.agent.generate``)."""

ANSWER_RESTARTED = "answer_restarted"
"""The error code of a stream whose answer was written again and does not continue what was sent."""


def model_failure(events: list[LoggedEvent]) -> str | None:
    """Why the request has no answer, when its model failed and no rule answer stands in for it.

    That is the chat apology: ``done`` says no model wrote the answer (``model`` null) and the chat
    answer's model call failed. Answers assembled by rules from tool results say so in their text
    and are answers; a model answer cut short keeps ``model`` and is one too.
    """
    done = next((e for e in reversed(events) if e.type == "done"), None)
    if done is None or done.data.get("model") is not None or done.data.get("interrupted"):
        return None
    failed = [e for e in events if e.type == "error" and e.data.get("where") == FAILED_CHAT_WHERE]
    if not failed:
        return None
    return f"the language model failed, so there is no answer: {failed[-1].data.get('message', '')}"


def continuation(sent: str, answer: str) -> str | None:
    """What of ``answer`` is left to send after ``sent``, when ``answer`` continues ``sent``; None if it
    does not. Runs of whitespace match whatever whitespace stands in the other text, and whitespace
    at the end of ``sent`` matches none."""
    i = j = 0
    while i < len(sent):
        if sent[i].isspace():
            end_i, end_j = _skip_space(sent, i), _skip_space(answer, j)
            if end_j == j and end_i < len(sent) and end_j < len(answer):
                return None  # a space streamed where the answer has none, inside the text
            i, j = end_i, end_j
        elif j < len(answer) and answer[j] == sent[i]:
            i, j = i + 1, j + 1
        else:
            return None
    return answer[j:]


def _skip_space(text: str, start: int) -> int:
    end = start
    while end < len(text) and text[end].isspace():
        end += 1
    return end


@dataclass
class StreamedAnswer:
    """The text a streamed completion has sent, and where Saber last replaced it."""

    sent: str = ""
    replaced_at: int | None = None
    """Length of ``sent`` when the last ``error`` event arrived: what follows may replace what came before."""
    holding: bool = False
    """Tokens are kept back: they follow a failed chat model call, so they are an apology, not an answer."""
    held: list[str] = field(default_factory=list)

    def on_event(self, event: LoggedEvent) -> str:
        """The content to send for ``event`` (not ``done``): a token's text, or nothing."""
        if event.type == "error":
            self.replaced_at = len(self.sent)
            self.holding = self.holding or (event.data.get("where") == FAILED_CHAT_WHERE and not self.sent.strip())
            return ""
        if event.type != "token":
            return ""
        content = str(event.data.get("content", ""))
        if self.holding:
            self.held.append(content)
            return ""
        self.sent += content
        return content

    def finish(self, answer: str) -> str:
        """What to send at ``done`` (the request did not fail) so that the client holds ``answer`` once."""
        released = "".join(self.held)
        self.sent, self.held, self.holding = self.sent + released, [], False
        return released + self._rest_of(answer)

    def _rest_of(self, answer: str) -> str:
        if not answer.strip():
            return ""
        rest = continuation(self.sent, answer)
        if rest is not None:
            return rest
        if self.replaced_at is not None:
            before, after = self.sent[: self.replaced_at], self.sent[self.replaced_at :]
            rest = continuation(after.lstrip(), answer)
            if rest is not None:
                return "\n\n" + rest if not after.strip() and before.strip() else rest
        head, newline, last = answer.rpartition("\n")
        if newline and head.strip() and continuation(head, self.sent) is not None:
            return newline + last  # the answer is what was streamed, cut, and a note
        return "\n\n" + answer if self.sent.strip() else answer


@dataclass
class CompletionText:
    """What a streamed completion sends, over the attempts of its run (see the module's docstring)."""

    attempt: StreamedAnswer = field(default_factory=StreamedAnswer)
    sent: str = ""
    """What the client holds."""
    restarted: bool = False
    written: str = ""
    """What the current attempt would have sent, while it catches up with ``sent``."""
    caught_up: bool = True
    """The current attempt's text has reached the end of ``sent``: what it adds is sent as it comes."""
    diverged: bool = False
    """The current attempt's text does not continue ``sent``: nothing more is sent before ``done``."""

    def on_event(self, event: LoggedEvent) -> str:
        """The content to send for ``event`` (not ``done``)."""
        if event.type == "start" and event.data.get("restarted"):
            self.attempt, self.restarted, self.written = StreamedAnswer(), True, ""
            self.caught_up, self.diverged = not self.sent, False
            return ""
        return self._send(self.attempt.on_event(event))

    def finish(self, answer: str) -> str | None:
        """What to send at ``done`` so that the client holds ``answer`` once; None when it cannot,
        because the answer was written again and does not continue what the client holds."""
        rest = self.attempt.finish(answer)
        if not self.restarted:
            return rest
        continued = continuation(self.sent, answer)
        if continued is not None:
            return continued
        return rest if self.caught_up else None

    def _send(self, text: str) -> str:
        if self.caught_up:
            self.sent += text
            return text
        self.written += text
        if self.diverged:
            return ""
        sent, written = _squeezed(self.sent), _squeezed(self.written)
        if sent.startswith(written):
            return ""  # the client holds this already
        rest = continuation(self.sent, self.written) if written.startswith(sent) else None
        if rest is None:
            self.diverged = True
            return ""
        self.caught_up = True
        self.sent += rest
        return rest


def _squeezed(text: str) -> str:
    return " ".join(text.split())


def restarted_error(task_id: str) -> str:
    return (f"the worker writing this answer stopped after sending part of it, and the answer written again "
            f"does not continue that part (a stream cannot take text back): the whole answer is at "
            f"GET /api/tasks/{task_id}")


def error_chunk(message: str, code: str) -> dict[str, Any]:
    """The event an OpenAI stream ends with on failure: the ``openai`` client raises ``APIError`` on it."""
    return {"error": {"message": message, "type": "server_error", "code": code, "param": None}}
