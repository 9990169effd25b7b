"""Preferences: a few facts about the user (city, timezone, name, language, country) used to fill
tool arguments and to address the user.

``extract_preferences(text)`` is the fast rule pass run on every query ("我叫小王", "I live in
Berlin", "以后用英文回答"); ``ModelPreferenceExtractor`` asks a model for the same keys as JSON
and runs in the background. Both normalise values (a known city to its canonical name, a
timezone to an IANA zone, a language to its code) and pass every value through the gates.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from saber.agent.memory._normalise import (
    PLACE_SUFFIX,
    CityNormaliser,
    country_pattern_zh,
    known_city,
    known_country,
    normalise_language,
    normalise_timezone,
    strip_place,
)
from saber.agent.memory.extract import strict_json
from saber.agent.memory.gates import Rejection, check_memory_text
from saber.language import has_han
from saber.llm.base import ChatModel
from saber.llm.types import Message

log = logging.getLogger(__name__)

PREFERENCE_KEYS: tuple[str, ...] = ("city", "timezone", "name", "language", "country")
MAX_VALUE_CHARS = 80


@dataclass(frozen=True, kw_only=True, slots=True)
class PreferenceExtraction:
    updates: dict[str, str] = field(default_factory=dict)
    rejections: list[tuple[str, Rejection]] = field(default_factory=list)
    """(key, why) for values that looked like a secret or an injected instruction."""


# --- rules ---------------------------------------------------------------------------------------

_STOP = r"[\s，。,.!！?？、；;:：()（）\"'“”]"
_ZH_VALUE = r"(?P<v>[^\s，。,.!！?？、；;:：()（）\"'“”]{1,20}?)"
_ZH_NAME_END = rf"(?={_STOP}|$|我|住|在|是|今年|来自|和|就好|就行|吧|哦|啊|呀|了|，)"
_ZH_PLACE_END = rf"(?={_STOP}|$|的|附近|这边|那边|一带|工作|上班|生活|读书|上学|定居|居住|和|，)"
_EN_END = r"(?i:(?=\s*(?:[,.;!?()]|$|\b(?:and|but|with|for|since|now|near|so|currently|because|at|where|while)\b)))"
_EN_WORDS = r"(?P<v>[A-Za-z\u4e00-\u9fff][\w'.\-]*(?:\s+[\w'.\-]+){0,4}?)"
"""Case-insensitive flags are scoped to the English words around it: IGNORECASE over a class that
holds the CJK range makes ``re`` case-fold twenty thousand characters, about 4 ms a pattern at
import, on every command that loads the agent. The class already holds both cases."""

_NAME_RULES = [
    re.compile(r"我(?:的名字|的姓名)?叫(?:做)?" + _ZH_VALUE + _ZH_NAME_END),
    re.compile(r"我的(?:名字|姓名)(?:是|为)" + _ZH_VALUE + _ZH_NAME_END),
    re.compile(r"(?:你可以|可以|请|就|大家都|都|你就)叫我" + _ZH_VALUE + _ZH_NAME_END),
    re.compile(r"(?i:\bmy name(?: is|'s))\s+(?P<v>[A-Za-z\u4e00-\u9fff][\w'.\-]*(?:\s+[A-Z][\w'.\-]*){0,3})"),
    re.compile(
        r"(?i:(?:^|\b(?:please|just|you can|you may|everyone|people|friends)\s+)call me)\s+"
        r"(?P<v>[A-Za-z\u4e00-\u9fff][\w'.\-]*(?:\s+[A-Z][\w'.\-]*){0,2})"
    ),
]
_NOT_NAMES = re.compile(
    r"(?i)^(?:什么|啥|谁|哪|吗|back|later|tomorrow|when|if|at|on|in|anytime|now|soon|please|maybe|"
    r"sometime|whenever|after|before|not|a|an|the|what|asap|again|tonight|today)\b|什么|吗|"
    r"^(?:了|过|他|她|你|它|人|车|醒|来|去|回|做|帮|给|把|看|吃|上|下|别|不)"
)
MAX_ZH_NAME = 6

# (pattern, strong): a strong pattern stores an unknown place as said; a weak one ("I work in X")
# only when X is a known city or reads as a place name.
_CITY_RULES: list[tuple[re.Pattern[str], bool]] = [
    (re.compile(r"(?:^|我)(?:现在|目前|一直)?(?:住在|住|生活在|居住在|定居在|定居于|人在|现居)" + _ZH_VALUE + _ZH_PLACE_END), True),
    (re.compile(r"我(?:现在|目前|一直)?在" + _ZH_VALUE + r"(?:工作|上班|生活|定居|读书|上学)"), False),
    (re.compile(r"我(?:所在|的)城市(?:是|为)" + _ZH_VALUE + _ZH_PLACE_END), True),
    (re.compile(r"(?i:\bI(?:\s+currently|\s+now)?\s+live\s+in)\s+" + _EN_WORDS + _EN_END), True),
    (re.compile(r"(?i:\bI(?:'m|\s+am)\s+(?:currently\s+|now\s+)?(?:based|living|located|staying)\s+in)\s+" + _EN_WORDS + _EN_END), True),
    (re.compile(r"(?i:\bmy\s+(?:home\s+)?city\s+is)\s+" + _EN_WORDS + _EN_END), True),
    (re.compile(r"(?i:\bI\s+(?:work|study)\s+in)\s+" + _EN_WORDS + _EN_END), False),
]
_NOT_PLACES = re.compile(
    r"(?i)^(?:a|an|the|my|his|her|our|their|this|that|fear|hope|peace|denial|poverty|luxury|comfort|"
    r"finance|tech|it|sales|marketing|education|software)\b|^(?:这里|那里|这儿|那儿|哪|家|公司|学校|单位|一家|一个)"
)
_ORG_WORDS = re.compile(r"家|公司|银行|学校|大学|医院|店|厂|部门|研究所|单位|集团|哪")

_TZ_RULE = re.compile(
    r"(?:时区|(?i:\btime\s*zone\b|\btimezone\b))\s*(?:是|为|设为|设置为|改为|改成|用|(?i:is)|:|=|(?i:to))?\s*"
    r"(?P<v>[A-Za-z_]+/[A-Za-z_+\-0-9/]+|(?i:utc|gmt)\s*[+-]\s*\d{1,2}(?::?00)?|[\u4e00-\u9fff]{2,6}时间|[东西][一二三四五六七八九十\d]{1,2}区|[A-Za-z]{2,4}\b)"
)
_TZ_ZH_ZONE = re.compile(r"(?:^|在|于|是|用|\s)(?P<v>[东西](?:十[一二]?|[一二三四五六七八九十]|\d{1,2})区)")

_LANG_NAMES_ZH = r"中文|汉语|普通话|英文|英语|日语|日文|韩语|韩文|法语|德语|西班牙语|俄语|粤语"
_LANG_NAMES_EN = r"English|Chinese|Mandarin|Japanese|Korean|French|German|Spanish|Russian|Cantonese"
_LANG_RULES = [
    re.compile(rf"(?:用|说|讲|使用)(?P<v>{_LANG_NAMES_ZH})(?:来)?(?:回答|回复|交流|跟我说|和我说|对我说|跟我聊|和我聊|聊天|对话|说话|沟通)"),
    re.compile(rf"我(?:的)?(?:母语|首选语言|语言)(?:是|为)(?P<v>{_LANG_NAMES_ZH}|{_LANG_NAMES_EN})"),
    re.compile(rf"(?i)\b(?:speak|reply|respond|answer|talk|write|chat)(?:\s+to\s+me|\s+with\s+me)?\s+in\s+(?P<v>{_LANG_NAMES_EN})\b"),
    re.compile(rf"(?i)\bspeak\s+(?P<v>{_LANG_NAMES_EN})\b(?!\s+(?:well|fluently|a little|poorly))"),
    re.compile(rf"(?i)\bmy\s+(?:preferred|native|first)\s+language\s+is\s+(?P<v>{_LANG_NAMES_EN})\b"),
]

_COUNTRY_RULES = [
    re.compile(r"我(?:的)?(?:国家|国籍)(?:是|为)" + _ZH_VALUE + _ZH_PLACE_END),
    re.compile(rf"我(?:是|来自)(?P<v>{country_pattern_zh()})(?:人)?"),
    re.compile(r"(?i:\bmy\s+(?:home\s+)?country\s+is)\s+" + _EN_WORDS + _EN_END),
    re.compile(r"(?i:\bI(?:'m|\s+am|\s+come)\s+from)\s+" + _EN_WORDS + _EN_END),
]
_CLAUSE = re.compile(r"(?:[^。！？!?\n;；，,.]|\.(?![\s.]|$))+[。！？!?;；，,.]?")
"""A clause ends at sentence or clause punctuation, a full stop included ("Alice. Remember..." is two);
a dot inside a word ("J.R.", "3.5", "example.com") does not end it."""
_QUESTION = re.compile(
    r"(?:[?？]|吗|呢|么)\s*$|^\s*(?:do|does|did|am|is|are|can|could|should|would|what|where|who)\b", re.IGNORECASE
)


def _clauses(text: str) -> list[str]:
    """Split on sentence and clause punctuation; questions are not statements about the user."""
    folded = unicodedata.normalize("NFKC", text) if text else ""
    return [c for c in (m.group().strip() for m in _CLAUSE.finditer(folded)) if c and not _QUESTION.search(c)]


_is_cjk = has_han


def _clean(value: str) -> str:
    return value.strip().strip(" .,。，!！'\"“”").strip()


def _city(value: str, strong: bool, normalise: CityNormaliser) -> str | None:
    raw = _clean(value)
    if not raw or _NOT_PLACES.search(raw):
        return None
    known = normalise(raw)
    if known:
        return known
    if strong or PLACE_SUFFIX.search(raw):
        place = strip_place(raw)
        return None if _ORG_WORDS.search(place) else place
    return None


def _first(rules: list[re.Pattern[str]], clause: str) -> str | None:
    for rule in rules:
        m = rule.search(clause)
        if m:
            return _clean(m.group("v"))
    return None


def _rule_updates(clause: str, normalise: CityNormaliser) -> dict[str, str]:
    found: dict[str, str] = {}
    name = _first(_NAME_RULES, clause)
    if name and not _NOT_NAMES.search(name) and not (_is_cjk(name) and len(name) > MAX_ZH_NAME):
        found["name"] = name
    for rule, strong in _CITY_RULES:
        m = rule.search(clause)
        if m and (city := _city(m.group("v"), strong, normalise)):
            found["city"] = city
            break
    tz_match = _TZ_RULE.search(clause) or _TZ_ZH_ZONE.search(clause)
    if tz_match and (tz := normalise_timezone(tz_match.group("v"))):
        found["timezone"] = tz
    lang = _first(_LANG_RULES, clause)
    if lang and (code := normalise_language(lang)):
        found["language"] = code
    country = _first(_COUNTRY_RULES, clause)
    if country and (canonical := known_country(country)):
        found["country"] = canonical
    elif country and re.search(r"国家|国籍|country", clause, re.IGNORECASE) and not _NOT_PLACES.search(country):
        found["country"] = country
    return found


def _gate(candidates: Mapping[str, str]) -> PreferenceExtraction:
    result = PreferenceExtraction()
    for key, value in candidates.items():
        rejection = check_memory_text(value)
        if rejection is not None:
            result.rejections.append((key, rejection))
        elif value and len(value) <= MAX_VALUE_CHARS and "\n" not in value:
            result.updates[key] = value
    return result


MAX_SCAN_CHARS = 2_000


def extract_preferences_checked(text: str, *, city_normaliser: CityNormaliser = known_city) -> PreferenceExtraction:
    """Rule extraction with the gates' verdicts; later clauses win ("我住在北京…现在住在上海").

    Only the first ``MAX_SCAN_CHARS`` characters are read: people say who they are in a message,
    not deep inside a pasted document, and the rules run on the event loop."""
    candidates: dict[str, str] = {}
    for clause in _clauses(text[:MAX_SCAN_CHARS]):
        candidates.update(_rule_updates(clause, city_normaliser))
    return _gate(candidates)


def extract_preferences(text: str, *, city_normaliser: CityNormaliser = known_city) -> dict[str, str]:
    """The preference updates stated in ``text`` (keys among ``PREFERENCE_KEYS``); ``{}`` when none."""
    return extract_preferences_checked(text, city_normaliser=city_normaliser).updates


# --- model ---------------------------------------------------------------------------------------

_PROMPT = """You maintain a small profile of the user. From the user's message below, extract only
facts the user clearly states about themselves, for these keys:
- name: what the user wants to be called
- city: the city the user lives or works in
- timezone: an IANA timezone name such as "Asia/Shanghai"
- language: the language the user wants answers in, as an ISO 639-1 code ("zh", "en")
- country: the user's country
Leave out anything guessed, anything about other people, and never include passwords, keys,
tokens, ID or card numbers. Reply with one JSON object and nothing else, e.g. {"city": "Beijing"};
reply {} when the message states none of these."""

_KEY_ALIASES = {
    "城市": "city", "location": "city", "时区": "timezone", "tz": "timezone", "姓名": "name", "名字": "name",
    "语言": "language", "lang": "language", "国家": "country",
}
_NORMALISERS: dict[str, Callable[[str], str | None]] = {
    "timezone": normalise_timezone,
    "language": normalise_language,
    "country": lambda v: known_country(v) or _clean(v),
    "name": _clean,
}


def parse_preference_json(text: str, *, city_normaliser: CityNormaliser = known_city) -> PreferenceExtraction:
    """Lenient parse of a model's reply: code fences, trailing commas and Chinese keys are fine;
    unknown keys, non-string values and values that do not normalise are dropped."""
    data: Any = strict_json(text)
    if data is None:
        return PreferenceExtraction()
    if isinstance(data, list):
        data = next((item for item in data if isinstance(item, dict)), {})
    if not isinstance(data, dict):
        return PreferenceExtraction()
    candidates: dict[str, str] = {}
    for raw_key, raw_value in data.items():
        key = _KEY_ALIASES.get(str(raw_key).strip(), str(raw_key).strip().casefold())
        if key not in PREFERENCE_KEYS or not isinstance(raw_value, str) or not raw_value.strip():
            continue
        value = raw_value.strip()
        if key == "city":
            normalised: str | None = city_normaliser(value) or strip_place(value)
        else:
            normalised = _NORMALISERS[key](value)
        if normalised:
            candidates[key] = normalised
    return _gate(candidates)


class ModelPreferenceExtractor:
    """Asks a model for the preference keys as JSON; meant to run in the background."""

    def __init__(self, model: ChatModel, *, city_normaliser: CityNormaliser = known_city) -> None:
        self.model = model
        self.city_normaliser = city_normaliser

    async def extract(self, text: str) -> PreferenceExtraction:
        """Raises ``ModelError`` when the model call fails; a malformed reply extracts nothing."""
        if not text.strip():
            return PreferenceExtraction()
        completion = await self.model.complete(
            [Message.system(_PROMPT), Message.user(text)], temperature=0.0
        )
        extraction = parse_preference_json(completion.text, city_normaliser=self.city_normaliser)
        if not extraction.updates and not extraction.rejections and completion.text.strip() not in ("", "{}"):
            log.debug("preference extraction: nothing usable in %r", completion.text[:200])
        return extraction
