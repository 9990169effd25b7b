"""Short-term history: each user's last N messages, persisted in the store.

The window is counted in messages (a turn is two: the user's and the answer). History is the
conversation itself, so it is not gated like long-term memory; it is bounded instead, and each
message is capped so one pasted document cannot crowd out the rest of the context.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from saber.agent.memory.store import HISTORY_ROLES, HistoryEntry, HistoryRole, MemoryStore
from saber.llm.types import Message

DEFAULT_WINDOW = 20
MAX_MESSAGE_CHARS = 8000
MAX_TOTAL_CHARS = 24_000
"""What the history put before a query may hold in all: the newest messages that fit (twenty long
pastes would otherwise ride along with every request for twenty turns)."""


class ShortTermHistory:
    def __init__(
        self,
        store: MemoryStore,
        *,
        window: int = DEFAULT_WINDOW,
        max_message_chars: int = MAX_MESSAGE_CHARS,
        max_total_chars: int = MAX_TOTAL_CHARS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if window < 1:
            raise ValueError("window: must be at least 1 message")
        self.store = store
        self.window = window
        self.max_message_chars = max_message_chars
        self.max_total_chars = max_total_chars
        self._clock = clock

    def append(self, user_id: str, role: HistoryRole, content: str) -> None:
        if role not in HISTORY_ROLES:
            raise ValueError(f"role: must be one of {sorted(HISTORY_ROLES)}, got {role!r}")
        if not isinstance(content, str):
            raise TypeError(f"content: must be a string, got {type(content).__name__}")
        if len(content) > self.max_message_chars:
            content = content[: self.max_message_chars] + " …[truncated]"
        self.store.append_history(user_id, role, content, keep=self.window, now=self._clock())

    def recent(self, user_id: str, n: int | None = None) -> list[HistoryEntry]:
        """The last ``n`` messages (default: the whole window), oldest first."""
        return self.store.recent_history(user_id, self.window if n is None else min(n, self.window))

    def messages(self, user_id: str, n: int | None = None) -> list[Message]:
        """The same, as chat messages ready to put before the new query: the newest that fit in
        ``max_total_chars`` together (the newest one always), never opening on an answer whose
        question was left out."""
        kept: list[Message] = []
        total = 0
        for entry in reversed(self.recent(user_id, n)):
            total += len(entry.content)
            if kept and total > self.max_total_chars:
                break
            kept.append(Message(role=entry.role, content=entry.content))
        while len(kept) > 1 and kept[-1].role == "assistant":  # an answer whose question did not fit
            kept.pop()
        return kept[::-1]

    def clear(self, user_id: str) -> None:
        self.store.clear_history(user_id)
