"""Whether a turn is worth a model call to extract memories and preferences, decided without one.

A model call per turn to find nothing ("北京天气怎么样", "what time is it in Tokyo") was the
largest avoidable cost of a turn. ``memory_cues(text)`` looks for cheap signs that the user
stated something about themselves: what the rule extractors already find ("I live in…",
"我喜欢…", "I'm vegetarian"), an explicit "remember…" / "记住…", a name ("call me…", "叫我…"),
and standing instructions ("from now on…", "以后都…", units, the answer's language). Clauses
that are questions state nothing and are skipped.

``ExtractionPolicy`` turns the ``memory.extraction`` setting into a decision per turn:
``cues`` (the default) calls the model only on such a turn; ``batch`` calls it once every
``memory.extraction_batch`` turns over the turns collected meanwhile; ``every_turn`` is the old
behaviour; ``off`` leaves extraction to the rules alone.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass
from typing import Literal

from saber.agent.memory.extract import extract_memories
from saber.agent.memory.preferences import extract_preferences_checked

ExtractionMode = Literal["cues", "batch", "every_turn", "off"]
EXTRACTION_MODES: tuple[ExtractionMode, ...] = ("cues", "batch", "every_turn", "off")

_CLAUSE = re.compile(r"(?:[^。！？!?;；，,\n.]|\.(?![\s.]|$))+[。！？!?;；，,.]*")
"""A clause with the punctuation that ends it (a question keeps its question mark); a full stop
ends one, a dot inside a word ("3.5", "J.R.") does not."""
_QUESTION = re.compile(
    r"(?:[?？]|吗|呢|么|嘛)\s*$|怎么样|多少|几点|什么|哪里|哪儿|是否|有没有"
    r"|^\s*(?:do|does|did|am|is|are|can|could|should|would|will|what|what's|where|who|how|why|when|which)\b",
    re.I,
)
_PREFERENCE_CUES = re.compile(
    r"(?i:\bfrom now on\b|\bby default\b|\balways\s+(?:use|reply|answer|respond|show|give|write|check)\b"
    r"|\b(?:use|in|prefer)\s+(?:celsius|fahrenheit|metric|imperial)\b|\bcall me\b|\bmy name(?:'s| is)\b"
    r"|\b(?:reply|answer|respond|talk|speak|write)\s+(?:to me\s+)?in\s+[A-Z][a-z]+|\bI(?:'ve| have)?\s+moved\s+to\b)"
    r"|以后|今后|往后|从现在起|默认|一律|叫我|我叫|我的名字|我搬到|搬家到|(?:用|使用|改用|换成|按)(?:摄氏|华氏|公制|英制|公里|英里|中文|英文|英语|日语)"
)
_FACT_CUES = re.compile(
    r"(?i:\b(?:remember|don't forget|do not forget|keep in mind)\b|\bI(?:'m| am)\s+(?:allergic|vegetarian|vegan)"
    r"|\bI\s+(?:work|study)\s+(?:at|for)\b|\bI\s+(?:don't|do not|never)\s+(?:eat|drink)\b"
    r"|\bmy\s+(?:wife|husband|son|daughter|kids?|children|dog|cat|partner|parents|mother|father|mum|mom|dad)\b)"
    r"|记住|记得|别忘|记一下|记下|我不吃|我不喝|我吃素|我过敏|我对.{1,10}过敏"
    r"|我(?:的)?(?:老婆|老公|妻子|丈夫|孩子|儿子|女儿|父母|爸爸|妈妈|小狗|小猫)"
)


@dataclass(frozen=True, kw_only=True, slots=True)
class Cues:
    """What a turn seems to state about the user."""

    preference: bool = False
    """Something a preference key may hold: a city, name, language, units, a standing instruction."""
    fact: bool = False
    """Anything else durable about the user, for long-term memory ("I'm vegetarian", "记住…"). A
    preference alone ("I live in Berlin") is not one: the preference keys hold it."""

    @property
    def any(self) -> bool:
        return self.preference or self.fact


def _statements(text: str) -> list[str]:
    folded = unicodedata.normalize("NFKC", text)
    clauses = (m.group().strip() for m in _CLAUSE.finditer(folded))
    return [c for c in clauses if c and not _QUESTION.search(c)]


def memory_cues(text: str) -> Cues:
    """Cheap signs (regular expressions only, no model) that ``text`` states something worth remembering."""
    statements = _statements(text)
    if not statements:
        return Cues()
    joined = "\n".join(statements)
    preference = bool(_PREFERENCE_CUES.search(joined)) or bool(extract_preferences_checked(text).updates)
    fact = bool(_FACT_CUES.search(joined)) or bool(extract_memories(text))
    return Cues(preference=preference, fact=fact)


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelExtraction:
    """The model calls one turn makes for memory: which ones, and over what text."""

    preferences: bool = False
    memories: bool = False
    text: str = ""
    """The user's words to extract from: this turn's, or a batch of turns joined."""
    batched: bool = False
    """``text`` holds several turns, so the answer of the last one is not given with it."""

    @property
    def any(self) -> bool:
        return self.preferences or self.memories


NO_EXTRACTION = ModelExtraction()
MAX_BATCH_USERS = 10_000
"""Users whose unsent turns a batching policy holds at once; the least recent are dropped past it."""


class ExtractionPolicy:
    """Decides, per turn, whether memory extraction calls the model (thread-safe).

    In ``batch`` mode the turns waiting for the next call are held in this process only: a
    restart loses at most ``batch - 1`` turns' model extraction (the rule extraction of every
    turn has already run)."""

    def __init__(self, mode: ExtractionMode = "cues", *, batch: int = 5) -> None:
        if mode not in EXTRACTION_MODES:
            raise ValueError(f"unknown memory extraction mode {mode!r}: use {', '.join(EXTRACTION_MODES)}")
        if batch < 1:
            raise ValueError(f"memory extraction batch must be at least 1, not {batch}")
        self.mode = mode
        self.batch = batch
        self._pending: OrderedDict[str, list[str]] = OrderedDict()
        self._lock = threading.Lock()

    def decide(self, user_id: str, text: str, *, rememberable: bool = True) -> ModelExtraction:
        """The model extraction for this turn of ``user_id``. ``rememberable=False`` (the text
        failed the gates) allows a preference call only, never one that stores the text."""
        if self.mode == "off" or not text.strip():
            return NO_EXTRACTION
        if self.mode == "every_turn":
            return ModelExtraction(preferences=True, memories=rememberable, text=text)
        if self.mode == "cues":
            cues = memory_cues(text)
            return ModelExtraction(preferences=cues.preference, memories=cues.fact and rememberable, text=text)
        if not rememberable:
            return NO_EXTRACTION
        return self._batched(user_id, text)

    def _batched(self, user_id: str, text: str) -> ModelExtraction:
        with self._lock:
            turns = self._pending.pop(user_id, [])
            turns.append(text)
            if len(turns) < self.batch:
                self._pending[user_id] = turns
                while len(self._pending) > MAX_BATCH_USERS:
                    self._pending.popitem(last=False)
                return NO_EXTRACTION
        return ModelExtraction(preferences=True, memories=True, text="\n".join(turns), batched=True)
