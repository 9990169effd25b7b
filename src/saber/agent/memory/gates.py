"""Gates: what must never be stored in memory — secrets and instructions injected into memory.

``check_memory_text(text)`` returns ``None`` for text that may be stored, else a ``Rejection``
with a reason a user can read in the event stream ("looks like an API key"). Every path into
memory (history aside) goes through it: preferences, rule-extracted and model-extracted memories.

Secrets are found by ``saber.redact`` (the one detector, also used to mask what is persisted);
injected instructions by the rules here.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from saber.redact import first_secret

RejectionKind = Literal["secret", "injection", "invalid"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Rejection:
    """Why a text was not stored. ``span`` locates the offending part (for redaction)."""

    kind: RejectionKind
    reason: str
    span: tuple[int, int] = (0, 0)

    def redact(self, text: str) -> str:
        """The text with the offending part masked, safe to show in events and logs."""
        start, end = self.span
        if self.kind != "secret" or end <= start:
            return text
        return text[:start] + "[redacted]" + text[end:]


_Check = Callable[[str], "Rejection | None"]

# --- secrets: the one detector in saber.redact ------------------------------------------------------

def _secret(text: str) -> Rejection | None:
    found = first_secret(text)
    return None if found is None else Rejection(kind="secret", reason=found.reason, span=found.span)


# --- injected instructions -----------------------------------------------------------------------

_QUALIFIER = r"(?:previous|prior|above|earlier|preceding|original|system|existing|former|these|those)"
_INJECTION_PATTERNS: list[re.Pattern[str]] = [
    re.compile(
        rf"(?i)\b(?:ignore|disregard|forget|override|bypass)\s+(?:(?:all|any|of|the)\s+)*"
        rf"(?:your\s+(?:{_QUALIFIER}\s+)?|(?:my\s+)?{_QUALIFIER}\s+)"
        r"(?:(?:system|safety|old)\s+)?(?:instructions?|prompts?|rules|directives|guidelines|programming|messages)\b"
    ),
    re.compile(r"(?i)\b(?:ignore|disregard)\s+(?:all|any)\s+(?:instructions?|prompts?|rules|directives|guidelines)\b"),
    re.compile(
        r"(?i)\b(?:ignore|disregard|forget|override)\s+(?:(?:all|any|of|the|your)\s+)*(?:prior|previous|earlier|above)\s+"
        r"(?:guidance|context|conversation|everything|input|setup|configuration)\b"
    ),
    re.compile(r"(?i)\bforget\s+everything\s+(?:you\s+(?:were|have\s+been)\s+told|above|before)\b"),
    re.compile(r"(?i)\bact\s+as\b[^.!?]{0,60}\bfrom\s+now\s+on\b|\bfrom\s+now\s+on\b[^.!?]{0,20}\bact\s+as\b"),
    re.compile(r"(?i)\bnew\s+system\s+prompt\b"),
    re.compile(r"(?i)\byou\s+are\s+now\b"),
    re.compile(r"(?i)\bfrom\s+now\s+on,?\s+you\s+(?:are|will|must|should|shall)\b"),
    re.compile(r"(?i)\bpretend\s+(?:that\s+)?you\s*(?:are|'re)\b"),
    re.compile(r"(?i)\byour\s+new\s+(?:instructions?|role|persona|identity|rules?)\b"),
    re.compile(r"(?i)\bnew\s+(?:system\s+)?instructions?\s*[:：]"),
    re.compile(r"(?i)\b(?:reveal|print|show|repeat|leak|override|change)\s+(?:me\s+)?(?:your|the)\s+system\s+prompt\b"),
    re.compile(r"(?i)\b(?:jailbreak|DAN mode|developer mode enabled)\b"),
    re.compile(r"(?im)(?:^|[.!?。！？;；\"'“”‘’\[(<{]\s*)(?:system|developer)\s*[:：]"),
    re.compile(r"(?i)<\|?(?:system|im_start|im_end|endoftext)\|?>|\[/?INST\]|<</?SYS>>"),
    re.compile(
        r"(?:忽略|无视|忘记|忘掉|不要理会|跳过)(?:掉)?(?:你)?(?:之前|以上|上面|前面|先前|此前|原来|所有|全部|一切|系统)(?:的|所有的)?"
        r"(?:所有|全部)?(?:指令|指示|提示词?|规则|设定|要求|命令|对话|约束)"
    ),
    re.compile(r"你现在(?:是|扮演|的身份是|的角色是)"),
    re.compile(r"从现在(?:开始|起)[，,]?\s*你(?:就)?(?:是|要|必须|将|只能|应该|扮演|充当|作为)"),
    re.compile(r"(?:你)?(?:扮演|充当)一个不受(?:任何)?(?:限制|约束)"),
    re.compile(r"你的新(?:身份|角色|指令|任务|规则)(?:是|为)"),
    re.compile(r"(?:泄露|输出|显示|告诉我)(?:你的)?系统提示"),
    re.compile(r"(?m)(?:^|[。！？；\s])系统\s*[:：]"),
    re.compile(r"越狱模式|开发者模式"),
]


def _injection(text: str) -> Rejection | None:
    for pattern in _INJECTION_PATTERNS:
        m = pattern.search(text)
        if m:
            return Rejection(kind="injection", reason="looks like an injected instruction", span=m.span())
    return None


_CHECKS: tuple[_Check, ...] = (_secret, _injection)


_WINDOW = 8_192
_OVERLAP = 512
"""Long text is checked in overlapping windows: every rule's match is far shorter than the overlap
(a longer secret token still matches in the window it starts in), so nothing is missed, each regex
call stays short, and a thread running the gates hands the GIL back between windows."""


def check_memory_text(text: str) -> Rejection | None:
    """``None`` when ``text`` may be stored; otherwise the first rule it breaks, with a reason.

    Full-width characters are folded (NFKC) first so "ｓｋ－..." or "ｓｙｓｔｅｍ：" cannot slip through;
    spans refer to the folded text when folding changed its length. Linear in the text's length.
    """
    if not isinstance(text, str):
        return Rejection(kind="invalid", reason="not text")
    folded = unicodedata.normalize("NFKC", text)
    for offset in range(0, max(len(folded) - _OVERLAP, 1), _WINDOW - _OVERLAP):
        window = folded[offset:offset + _WINDOW]
        for check in _CHECKS:
            found = check(window)
            if found is not None:
                if len(folded) != len(text):
                    return Rejection(kind=found.kind, reason=found.reason, span=(0, len(text)))
                start, end = found.span
                return Rejection(kind=found.kind, reason=found.reason, span=(start + offset, end + offset))
    return None
