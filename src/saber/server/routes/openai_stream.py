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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from saber.server.eventlog import LoggedEvent

FAILED_CHAT_WHERE = "chat"
"""The ``where`` of the ``error`` event of a chat answer whose model failed (``saber.agent.generate``)."""


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


def error_chunk(message: str, code: str) -> dict[str, Any]:
    """The event an OpenAI stream ends with on failure: the ``openai`` client raises ``APIError`` on it."""
    return {"error": {"message": message, "type": "server_error", "code": code, "param": None}}
