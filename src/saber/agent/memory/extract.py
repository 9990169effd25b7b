"""Finding long-term memories in a finished turn.

``extract_memories(user_text)`` is the rule pass: statements the user makes about themselves
("I like…", "我喜欢…", "我是…", "remember that…", "记住…"). Questions are skipped, and an explicit
"remember" request is stored with a higher importance. ``ModelMemoryExtractor`` asks a model for
durable facts as JSON and runs in the background. Candidates are not gated here: ``LongTermMemory``
gates everything it is given, whatever found it.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from saber.agent.memory.longterm import MemoryCandidate
from saber.llm.base import ChatModel
from saber.llm.types import Message

EXPLICIT_IMPORTANCE = 0.8
FACT_IMPORTANCE = 0.6
HABIT_IMPORTANCE = 0.5
MAX_CANDIDATE_CHARS = 300

_LEAD_EN = r"^(?P<lead>(?:(?:also|and|btw|by the way|oh|so|well|actually|fyi)[,:]?\s+)*)"
_LEAD_ZH = r"^(?P<lead>(?:另外|还有|顺便说一下|顺便|对了|其实|而且)?[,，]?\s*)"

# (pattern, importance, keep): with keep="v" only the named group is stored ("remember that X" → X).
_RULES: list[tuple[re.Pattern[str], float, bool]] = [
    (re.compile(_LEAD_EN + r"(?:please\s+)?(?:remember|note|keep in mind|don't forget|do not forget)(?:\s+that)?[:,]?\s+(?P<v>.{3,})", re.I), EXPLICIT_IMPORTANCE, True),
    (re.compile(_LEAD_ZH + r"(?:请你|请|麻烦|帮我|你要|你得)?(?:记住|记得|记一下|记下|别忘了|不要忘记|不要忘了)[,:：，]?\s*(?P<v>.{2,})"), EXPLICIT_IMPORTANCE, True),
    (re.compile(_LEAD_EN + r"I\s+(?:really\s+|also\s+|absolutely\s+|totally\s+)?(?:don't\s+|do not\s+)?(?:like|love|enjoy|prefer|hate|dislike|adore|can't stand|cannot stand)\s+\S.{1,}", re.I), FACT_IMPORTANCE, False),
    (re.compile(_LEAD_EN + r"I(?:'m|\s+am)\s+(?:a|an)\s+(?!bit\b|little\b|lot\b|moment\b|minute\b|second\b|sec\b)\S.{1,}", re.I), FACT_IMPORTANCE, False),
    (re.compile(_LEAD_EN + r"I(?:'m|\s+am)\s+(?:allergic|vegetarian|vegan|married|single|divorced|retired|left-handed|\d{1,3}\s+years?\s+old)\b.*", re.I), FACT_IMPORTANCE, False),
    (re.compile(_LEAD_EN + r"I\s+(?:have|own)\s+(?:a|an|two|three|four|\d+)\s+(?!question|problem|quick|doubt|meeting|minute|moment|look|try|idea|issue|request)\S.{1,}", re.I), HABIT_IMPORTANCE, False),
    (re.compile(_LEAD_EN + r"my\s+(?:favou?rite|birthday|wife|husband|son|daughter|kids?|children|dog|cat|pet|partner|job|profession|hobby|hobbies|team|car)\b.{0,40}?\b(?:is|are|was|'s)\b\s*\S.*", re.I), FACT_IMPORTANCE, False),
    (re.compile(_LEAD_EN + r"I\s+(?:work|study)\s+(?:as|at|for|on)\s+\S.{1,}", re.I), FACT_IMPORTANCE, False),
    (re.compile(_LEAD_EN + r"I\s+(?:always|usually|never|often|normally)\s+\S.{2,}", re.I), HABIT_IMPORTANCE, False),
    (re.compile(_LEAD_ZH + r"我(?:很|非常|特别|比较|也|最|真的|超|挺|还)?(?:喜欢|热爱|爱吃|爱喝|爱看|爱玩|讨厌|不喜欢|偏好|偏爱|习惯|不吃|不喝|不能吃|对.{1,10}过敏)(?P<v>.{2,})"), FACT_IMPORTANCE, False),
    (re.compile(_LEAD_ZH + r"我是(?!说|不|否|想|在|要|来|去|从|问|因为|谁|什么|哪)(?:一名|一个|一位|个)?.{2,30}"), FACT_IMPORTANCE, False),
    (re.compile(_LEAD_ZH + r"我有(?:一只|一个|一条|两个|两只|一位|个|只|条)?(?!问题|疑问|事|个问题|一个问题|点|想法|个想法|空)(?:.{1,30})"), HABIT_IMPORTANCE, False),
    (re.compile(_LEAD_ZH + r"我的(?:生日|爱好|职业|工作|专业|老婆|老公|妻子|丈夫|孩子|儿子|女儿|宠物|狗|猫|最爱|偶像)(?:是|叫|在).{1,}"), FACT_IMPORTANCE, False),
    (re.compile(_LEAD_ZH + r"我(?:每天|总是|经常|一般|通常|从不|从来不)(?P<v>.{2,})"), HABIT_IMPORTANCE, False),
]
_SENTENCE_BREAK = re.compile(r"(?<=[。！？!?;；])|\n")
_QUESTION = re.compile(r"(?:[?？]|吗|呢|么|嘛)\s*$|^\s*(?:do|does|did|am|is|are|can|could|should|would|what|where|who|how|why)\b", re.I)
_EN_SENTENCE_END = re.compile(r"(?<=[A-Za-z0-9)\"'])\.\s+(?=[A-Z]|i\b)")


def _sentences(text: str) -> list[str]:
    # No NFKC here: what is stored keeps the user's own punctuation ("，" stays full-width).
    folded = _EN_SENTENCE_END.sub(".\n", text)
    return [s.strip() for s in _SENTENCE_BREAK.split(folded) if s.strip()]


def _tidy(text: str) -> str:
    return " ".join(text.split()).strip(" ,，.。;；!！")


def extract_memories(user_text: str) -> list[MemoryCandidate]:
    """Rule-based candidates from what the user said, in order, without duplicates."""
    found: list[MemoryCandidate] = []
    seen: set[str] = set()
    for sentence in _sentences(user_text):
        if _QUESTION.search(sentence):
            continue
        for pattern, importance, keep_group in _RULES:
            m = pattern.search(sentence)
            if not m:
                continue
            text = _tidy(m.group("v") if keep_group else sentence[m.end("lead") :])
            if len(text) < 2 or len(text) > MAX_CANDIDATE_CHARS or _QUESTION.search(text):
                break
            if text.casefold() not in seen:
                seen.add(text.casefold())
                found.append(MemoryCandidate(text=text, importance=importance, source="rules"))
            break
    return found


# --- model ---------------------------------------------------------------------------------------

_PROMPT = """You decide what an assistant should remember about the user for future conversations.
From the turn below, list durable facts the USER states about themselves: preferences, habits,
background, people and things in their life, explicit requests to remember something.
Rules: only what the user said (not the assistant), no guesses, nothing temporary ("I'm hungry"),
never passwords, keys, tokens, ID or card numbers, and never instructions addressed to the assistant.
Write each fact as one short sentence in the user's language. Give each an importance from 0 to 1.
Reply with JSON only: {"memories": [{"text": "...", "importance": 0.6}]}, or {"memories": []}."""


_FENCE = re.compile(r"^\s*```[\w-]*[ \t]*\n?(.*?)(?:\n?\s*```\s*)?$", re.S)


def strict_json(text: str) -> Any:
    """The one JSON object or array a model's reply consists of, or None.

    The reply must be JSON-shaped: after an optional code fence it starts with ``{`` or ``[``.
    Free text ("FAKE MODEL"), a bare string or number yields None, so nothing is stored from it.
    Within a JSON-shaped reply, syntax slips (a trailing comma, a missing bracket at the end) are
    repaired, and only an object or array is accepted from the repair."""
    if not isinstance(text, str) or len(text) > 200_000:
        return None
    fenced = _FENCE.match(text)
    body = (fenced.group(1) if fenced else text).strip()
    if body[:1] not in ("{", "["):
        return None
    try:
        data = json.loads(body)
    except RecursionError:
        return None
    except ValueError:
        try:
            import json_repair  # only a model's malformed output needs it

            data = json_repair.loads(body)
        except (ValueError, RecursionError):
            return None
    return data if isinstance(data, dict | list) else None


def parse_memory_json(text: str) -> list[MemoryCandidate]:
    """Lenient parse of a model's reply: a list or {"memories"|"facts"|"items": [...]}; items may be
    strings or objects with text/content/memory and importance; bad items are skipped."""
    data: Any = strict_json(text)
    if isinstance(data, dict):
        data = next((data[k] for k in ("memories", "facts", "items", "memory") if k in data), [])
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        return []
    out: list[MemoryCandidate] = []
    for item in data:
        text_value: Any = item
        importance: Any = 0.5
        if isinstance(item, dict):
            text_value = next((item[k] for k in ("text", "content", "memory", "fact") if k in item), None)
            importance = item.get("importance", 0.5)
        if not isinstance(text_value, str) or not (cleaned := _tidy(text_value)) or len(cleaned) > MAX_CANDIDATE_CHARS:
            continue
        out.append(MemoryCandidate(text=cleaned, importance=_importance(importance), source="model"))
    return out


def _importance(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.5
    if math.isnan(number):
        return 0.5
    if number > 1.0 and number <= 10.0:  # some models answer on a 1-10 scale
        number /= 10.0
    return min(1.0, max(0.0, number))


class ModelMemoryExtractor:
    """Asks a model for durable facts from a turn; meant to run in the background."""

    def __init__(self, model: ChatModel) -> None:
        self.model = model

    async def extract(self, user_text: str, answer: str = "") -> list[MemoryCandidate]:
        """Raises ``ModelError`` when the model call fails; a malformed reply extracts nothing."""
        if not user_text.strip():
            return []
        turn = f"User: {user_text}\n\nAssistant: {answer[:2000]}" if answer else f"User: {user_text}"
        completion = await self.model.complete([Message.system(_PROMPT), Message.user(turn)], temperature=0.0)
        return parse_memory_json(completion.text)
