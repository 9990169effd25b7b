"""``MemoryService``: the one object the Agent talks to about memory.

Async methods over the synchronous parts (store, embedder), which run in worker threads, so a
request's event loop never waits on SQLite or an embedding. Every method takes a ``user_id`` and
touches only that user's rows. Results that the user should see (stored, merged, rejected with
a reason, preference changed) come back as ``MemoryResult``; ``to_event()`` makes the ``memory``
event for the stream.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from saber.agent.memory._normalise import CityNormaliser, known_city
from saber.agent.memory.cues import NO_EXTRACTION, ExtractionMode, ExtractionPolicy, ModelExtraction
from saber.agent.memory.extract import ModelMemoryExtractor, extract_memories
from saber.agent.memory.gates import Rejection, check_memory_text
from saber.agent.memory.history import DEFAULT_WINDOW, MAX_TOTAL_CHARS, ShortTermHistory
from saber.agent.memory.joint import JointExtractor
from saber.agent.memory.longterm import (
    DEFAULT_HALF_LIFE_DAYS,
    AddOutcome,
    LongTermMemory,
    MemoryCandidate,
    RecalledMemory,
)
from saber.agent.memory.preferences import (
    PREFERENCE_KEYS,
    ModelPreferenceExtractor,
    PreferenceExtraction,
    extract_preferences_checked,
)
from saber.agent.memory.store import HistoryRole, MemoryRecord, MemoryStore, check_user_id
from saber.events import Memory
from saber.llm.base import ChatModel, ModelError
from saber.llm.types import Message
from saber.rag.documents import EmbeddingError
from saber.rag.embedder import Embedder

if TYPE_CHECKING:
    from saber.config import Settings

log = logging.getLogger(__name__)

MemoryAction = Literal["stored", "merged", "rejected", "preference", "recalled"]


@dataclass(frozen=True, kw_only=True, slots=True)
class MemoryResult:
    """Something memory did that the user may see: one ``memory`` event each."""

    action: MemoryAction
    content: str
    """The memory text, ``key=value`` for a preference; secrets are redacted."""
    reason: str = ""
    """Why it was rejected ("looks like an API key")."""
    memory_id: int | None = None
    key: str | None = None
    """The preference key, for preference results and rejected preference values."""

    def to_event(self) -> Memory:
        return Memory(action=self.action, content=self.content, reason=self.reason)


@dataclass(frozen=True, kw_only=True, slots=True)
class TurnMemory:
    """What a turn starts from (``MemoryService.begin_turn``), read and written in one go."""

    history: list[Message]
    """The user's messages before this turn's query, oldest first."""
    preferences: dict[str, str]
    """The user's preferences, this query's changes included."""
    results: list[MemoryResult]
    """What the query changed or had rejected in the preferences: one ``memory`` event each."""
    recalled: list[RecalledMemory]
    recall_error: str | None = None
    """Why memories could not be recalled (the embedder failed); the turn goes on without them."""


def _outcome_result(outcome: AddOutcome) -> MemoryResult:
    return MemoryResult(
        action=outcome.action,
        content=outcome.record.text if outcome.record else outcome.text,
        reason=outcome.reason,
        memory_id=outcome.record.id if outcome.record else None,
    )


def _rejected_preference(key: str, rejection: Rejection) -> MemoryResult:
    return MemoryResult(action="rejected", content=f"{key}=[redacted]" if rejection.kind == "secret" else key,
                        reason=rejection.reason, key=key)


class MemoryService:
    """Per-user memory behind gates: the short-term conversation history, stated preferences
    (language, city, units...) and long-term memories recalled by embedding similarity. The Agent
    reads it before a turn and writes to it (in the background) after one."""

    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder,
        *,
        model: ChatModel | None = None,
        history_window: int = DEFAULT_WINDOW,
        history_max_chars: int = MAX_TOTAL_CHARS,
        merge_threshold: float | None = None,
        min_relevance: float | None = None,
        half_life_days: float = DEFAULT_HALF_LIFE_DAYS,
        city_normaliser: CityNormaliser = known_city,
        clock: Callable[[], float] = time.time,
        extraction: ExtractionMode = "cues",
        extraction_batch: int = 5,
    ) -> None:
        self.store = store
        self.model = model
        self.extraction = ExtractionPolicy(extraction, batch=extraction_batch)
        """When the model is asked to extract (``memory.extraction``): by default only on a turn
        whose cues say it states something about the user."""
        self.history_store = ShortTermHistory(store, window=history_window, max_total_chars=history_max_chars,
                                              clock=clock)
        self.longterm = LongTermMemory(
            store, embedder, merge_threshold=merge_threshold, min_relevance=min_relevance,
            half_life_days=half_life_days, clock=clock
        )
        self.city_normaliser = city_normaliser
        self._clock = clock

    @classmethod
    def open(
        cls,
        *,
        home: str | Path | None = None,
        database_url: str | None = None,
        embedder: Embedder | None = None,
        model: ChatModel | None = None,
        history_window: int = DEFAULT_WINDOW,
        history_max_chars: int = MAX_TOTAL_CHARS,
        merge_threshold: float | None = None,
        min_relevance: float | None = None,
        half_life_days: float = DEFAULT_HALF_LIFE_DAYS,
        pool_size: int | None = None,
        extraction: ExtractionMode = "cues",
        extraction_batch: int = 5,
    ) -> MemoryService:
        """PostgreSQL when ``database_url`` is given, else SQLite at ``home/saber.db``."""
        from saber.rag.embedder import LocalUSEEmbedder

        store: MemoryStore
        if database_url:
            from saber.agent.memory.postgres_store import PostgresMemoryStore

            store = PostgresMemoryStore(database_url, pool_size=pool_size)
        else:
            from saber.agent.memory.sqlite_store import SQLiteMemoryStore
            from saber.config import default_home

            store = SQLiteMemoryStore(Path(home) / "saber.db" if home is not None else default_home() / "saber.db",
                                      pool_size=pool_size)
        return cls(store, embedder or LocalUSEEmbedder(), model=model, history_window=history_window,
                   history_max_chars=history_max_chars, merge_threshold=merge_threshold, min_relevance=min_relevance,
                   half_life_days=half_life_days, extraction=extraction, extraction_batch=extraction_batch)

    @classmethod
    def from_settings(
        cls, settings: Settings, *, embedder: Embedder | None = None, model: ChatModel | None = None
    ) -> MemoryService:
        return cls.open(
            home=settings.home, database_url=settings.database.url, embedder=embedder,
            model=model, history_window=settings.history.turns, history_max_chars=settings.history.max_chars,
            merge_threshold=settings.memory.merge_threshold, min_relevance=settings.memory.min_relevance,
            half_life_days=settings.memory.half_life_days,
            pool_size=settings.database.pool_size, extraction=settings.memory.extraction,
            extraction_batch=settings.memory.extraction_batch,
        )

    def close(self) -> None:
        self.store.close()

    # --- a turn ------------------------------------------------------------------------------

    async def begin_turn(self, user_id: str, query: str, *, stored_query: str, recall: int = 3) -> TurnMemory:
        """Everything a turn needs from memory before it runs, in one worker-thread call: the
        history before ``query``; ``stored_query`` (the query as it may be stored: redacted)
        appended to it; the preferences ``query`` states applied (as ``update_preferences``); the
        preferences; the ``recall`` memories relevant to ``query``. One hand-off instead of one per
        store call: under load each hand-off queues behind every other request's.

        Nothing is cached: each call reads the store, so a turn sees what any earlier turn of the
        user wrote, in this process or another one on the same database."""
        check_user_id(user_id)
        return await asyncio.to_thread(self._begin_turn, user_id, query, stored_query, recall)

    def _begin_turn(self, user_id: str, query: str, stored_query: str, recall: int) -> TurnMemory:
        history = self.history_store.messages(user_id)
        self.history_store.append(user_id, "user", stored_query)
        extraction = extract_preferences_checked(query, city_normaliser=self.city_normaliser)
        results = [_rejected_preference(key, rejection) for key, rejection in extraction.rejections]
        preferences = self.store.get_preferences(user_id)
        changed = {k: v for k, v in extraction.updates.items() if preferences.get(k) != v}
        if changed:
            self.store.set_preferences(user_id, changed, now=self._clock())
            preferences = dict(sorted({**preferences, **changed}.items()))  # the store's order: by key
        results.extend(MemoryResult(action="preference", content=f"{k}={v}", key=k) for k, v in changed.items())
        try:
            recalled = self.longterm.recall(user_id, query, recall, relevant_only=True)
        except EmbeddingError as exc:
            return TurnMemory(history=history, preferences=preferences, results=results, recalled=[],
                              recall_error=str(exc))
        return TurnMemory(history=history, preferences=preferences, results=results, recalled=recalled)

    # --- short-term history ------------------------------------------------------------------

    async def append_history(self, user_id: str, role: HistoryRole, content: str) -> None:
        check_user_id(user_id)
        await asyncio.to_thread(self.history_store.append, user_id, role, content)

    async def history(self, user_id: str, n: int | None = None) -> list[Message]:
        """The user's recent messages, oldest first, ready to put before a new query."""
        check_user_id(user_id)
        return await asyncio.to_thread(self.history_store.messages, user_id, n)

    async def clear_history(self, user_id: str) -> None:
        check_user_id(user_id)
        await asyncio.to_thread(self.history_store.clear, user_id)

    # --- preferences -------------------------------------------------------------------------

    async def preferences(self, user_id: str) -> dict[str, str]:
        check_user_id(user_id)
        return await asyncio.to_thread(self.store.get_preferences, user_id)

    async def update_preferences(self, user_id: str, text: str) -> tuple[dict[str, str], list[MemoryResult]]:
        """Rule extraction from ``text`` (fast, run on every query). Returns the values that
        changed and the results to show: one ``preference`` per change, ``rejected`` per gated value."""
        check_user_id(user_id)
        extraction = extract_preferences_checked(text, city_normaliser=self.city_normaliser)
        return await self._apply_preferences(user_id, extraction)

    def plan_extraction(self, user_id: str, text: str, *, rememberable: bool = True) -> ModelExtraction:
        """Which model extraction calls this turn makes (none without a model); see ``memory.cues``."""
        check_user_id(user_id)
        if self.model is None:
            return NO_EXTRACTION
        return self.extraction.decide(user_id, text, rememberable=rememberable)

    async def learn_preferences(self, user_id: str, text: str) -> tuple[dict[str, str], list[MemoryResult]]:
        """Model-based extraction (for the background); nothing without a model or when it fails."""
        check_user_id(user_id)
        if self.model is None:
            return {}, []
        try:
            extraction = await ModelPreferenceExtractor(self.model, city_normaliser=self.city_normaliser).extract(text)
        except ModelError as exc:
            log.warning("preference extraction for %s failed: %s", user_id, exc)
            return {}, []
        return await self._apply_preferences(user_id, extraction)

    async def set_preferences(self, user_id: str, values: Mapping[str, str]) -> tuple[dict[str, str], list[MemoryResult]]:
        """Explicit values (from an API or settings page): keys must be known, values pass the gates."""
        check_user_id(user_id)
        unknown = sorted(set(values) - set(PREFERENCE_KEYS))
        if unknown:
            raise ValueError(f"unknown preference key(s): {', '.join(unknown)}; known: {', '.join(PREFERENCE_KEYS)}")
        extraction = PreferenceExtraction()
        for key, value in values.items():
            cleaned = " ".join(str(value).split())
            rejection = check_memory_text(cleaned)
            if rejection is not None:
                extraction.rejections.append((key, rejection))
            elif cleaned:
                extraction.updates[key] = cleaned
        return await self._apply_preferences(user_id, extraction)

    async def delete_preference(self, user_id: str, key: str) -> bool:
        check_user_id(user_id)
        return await asyncio.to_thread(self.store.delete_preference, user_id, key)

    async def _apply_preferences(
        self, user_id: str, extraction: PreferenceExtraction
    ) -> tuple[dict[str, str], list[MemoryResult]]:
        results = [_rejected_preference(key, rejection) for key, rejection in extraction.rejections]
        if not extraction.updates:
            return {}, results
        current = await asyncio.to_thread(self.store.get_preferences, user_id)
        changed = {k: v for k, v in extraction.updates.items() if current.get(k) != v}
        if changed:
            await asyncio.to_thread(self.store.set_preferences, user_id, changed, now=self._clock())
        results.extend(MemoryResult(action="preference", content=f"{k}={v}", key=k) for k, v in changed.items())
        return changed, results

    # --- long-term memories ------------------------------------------------------------------

    async def remember_turn(
        self, user_id: str, user_text: str, answer: str = "", *, use_model: bool = True, model_text: str | None = None,
        with_preferences: bool = False,
    ) -> list[MemoryResult]:
        """Extract memories from a finished turn (rules, plus the model when there is one and
        ``use_model``) and store them. ``model_text``: what the model reads instead of this turn
        (a batch of turns, given without the answer). ``with_preferences``: the same model call
        extracts the preferences too (one call instead of two). A failing model call is logged and
        costs only its own candidates."""
        check_user_id(user_id)
        candidates = extract_memories(user_text)
        results: list[MemoryResult] = []
        if use_model and self.model is not None:
            text, context = (user_text, answer) if model_text is None else (model_text, "")
            try:
                if with_preferences:
                    preferences, found = await JointExtractor(self.model, city_normaliser=self.city_normaliser
                                                              ).extract(text, context)
                    results = (await self._apply_preferences(user_id, preferences))[1]
                    candidates += found
                else:
                    candidates += await ModelMemoryExtractor(self.model).extract(text, context)
            except ModelError as exc:
                log.warning("memory extraction for %s failed: %s", user_id, exc)
        return results + await self._add(user_id, candidates)

    async def remember(self, user_id: str, text: str, *, importance: float = 0.7) -> MemoryResult:
        """Store one memory the user asked for explicitly (an API call, a "remember" command)."""
        check_user_id(user_id)
        results = await self._add(user_id, [MemoryCandidate(text=text, importance=importance, source="explicit")])
        return results[0]

    async def _add(self, user_id: str, candidates: list[MemoryCandidate]) -> list[MemoryResult]:
        if not candidates:
            return []
        outcomes = await asyncio.to_thread(self.longterm.add_many, user_id, candidates)
        return _dedupe([_outcome_result(o) for o in outcomes])

    async def recall(
        self, user_id: str, query: str, k: int = 3, *, min_similarity: float = -1.0, min_relevance: float | None = None,
        relevant_only: bool = False,
    ) -> list[RecalledMemory]:
        """The user's ``k`` best memories for ``query``. For context in a prompt, pass
        ``relevant_only=True`` so unrelated memories stay out (the threshold is the embedder's, or
        ``memory.min_relevance``)."""
        check_user_id(user_id)
        return await asyncio.to_thread(
            self.longterm.recall, user_id, query, k, min_similarity=min_similarity, min_relevance=min_relevance,
            relevant_only=relevant_only,
        )

    async def memories(self, user_id: str) -> list[MemoryRecord]:
        check_user_id(user_id)
        return await asyncio.to_thread(self.longterm.records, user_id)

    async def forget(self, user_id: str, memory_id: int) -> bool:
        check_user_id(user_id)
        return await asyncio.to_thread(self.longterm.delete, user_id, memory_id)

    async def forget_user(self, user_id: str) -> None:
        """Delete the user's history, preferences and memories."""
        check_user_id(user_id)
        await asyncio.to_thread(self.store.forget_user, user_id)


def _dedupe(results: list[MemoryResult]) -> list[MemoryResult]:
    """Rules and the model often find the same fact: report each memory once (its last action
    wins unless it was first stored in this turn)."""
    by_id: dict[int, MemoryResult] = {}
    out: list[MemoryResult] = []
    for result in results:
        if result.memory_id is None:
            out.append(result)
        elif result.memory_id in by_id:
            first = by_id[result.memory_id]
            if first.action != "stored":
                out[out.index(first)] = result
                by_id[result.memory_id] = result
        else:
            by_id[result.memory_id] = result
            out.append(result)
    return out
