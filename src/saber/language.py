"""Text rules shared by every part of Saber: which characters are Chinese (Han), which language a
text is in, and the note that labels an answer built without a language model.

One definition each, so the planner, the agent's prompts, memory, the place resolver and the
no-model answers agree on the same text. Standard library only: cheap to import anywhere.
"""

from __future__ import annotations

import re
from typing import Literal

Lang = Literal["zh", "en"]

HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
"""Han characters, as a regex class body: CJK Unified Ideographs, Extension A and the
Compatibility Ideographs (what Chinese text is written in; the rarer extensions B+ lie outside
the Basic Multilingual Plane and are left out on purpose)."""

HAN_CHAR = re.compile(f"[{HAN}]")

NOT_TIME_AFTER = "复杂度|序列|轴|线|管理|戳|成本|片|段|差|机器"
"""What after 时间 makes a topic, not a question about the time (时间复杂度, 时间序列...)."""


def is_han(ch: str) -> bool:
    """True for one Han character."""
    return bool(HAN_CHAR.fullmatch(ch))


def has_han(text: str) -> bool:
    """True when ``text`` contains a Han character: the script test for names ("北京" vs "Beijing")."""
    return HAN_CHAR.search(text) is not None


def language_of(text: str) -> Lang:
    """The language to answer ``text`` in: ``"zh"`` when Han characters are a real part of it (at
    least a fifth of its letters), else ``"en"``. "帮我查一下 Kubernetes service 的类型" is zh;
    "What's the weather in 北京?" is en."""
    han = len(HAN_CHAR.findall(text))
    if not han:
        return "en"
    letters = sum(1 for ch in text if ch.isalpha())
    return "zh" if han * 4 >= max(1, letters - han) else "en"


NO_MODEL_NOTE = (
    "Note: no language model is configured, so this answer was assembled by rules from the tool "
    "results; it was not written by a language model."
)
NO_MODEL_NOTE_ZH = "注：未配置语言模型，本回答由规则根据工具结果整理而成，并非语言模型生成。"


def no_model_note(text: str = "", *, language: str | None = None) -> str:
    """The label for a rule-built answer: Chinese when ``language`` starts with ``zh`` or, when no
    language is given, when ``text`` (the query or the answer) contains Han characters."""
    chinese = language.lower().startswith("zh") if language is not None else has_han(text)
    return NO_MODEL_NOTE_ZH if chinese else NO_MODEL_NOTE
