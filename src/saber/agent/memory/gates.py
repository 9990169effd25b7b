"""Gates: what must never be stored in memory — secrets and instructions injected into memory.

``check_memory_text(text)`` returns ``None`` for text that may be stored, else a ``Rejection``
with a reason a user can read in the event stream ("looks like an API key"). Every path into
memory (history aside) goes through it: preferences, rule-extracted and model-extracted memories.

The rules lean towards precision on ordinary sentences: numbers are only treated as ID or card
numbers when their checksums hold, and a password needs a value after "is" / "是" / ":".
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Literal

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

# --- secrets -------------------------------------------------------------------------------------

_KEY_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----"), "looks like a private key"),
    (re.compile(r"\bsk-(?:proj-|ant-|live-)?[A-Za-z0-9_\-]{16,}"), "looks like an API key"),
    (re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"), "looks like an API key"),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), "looks like an AWS access key"),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"), "looks like a GitHub token"),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{30,}"), "looks like a GitHub token"),
    (re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}"), "looks like a GitLab token"),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"), "looks like a Slack token"),
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"), "looks like a Google API key"),
    (re.compile(r"\bhf_[A-Za-z0-9]{30,}"), "looks like an API key"),
    (re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"), "looks like a JWT token"),
    (re.compile(r"(?i)\bbearer\s+[A-Za-z0-9\-._~+/]{16,}=*"), "looks like a bearer token"),
    (re.compile(r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s:/@]+:[^\s@/]+@"), "looks like a URL with a password"),
]

_NOT_A_VALUE = (
    r"(?:incorrect|wrong|correct|required|invalid|expired|too|not|the same|weak|strong|long|short|"
    r"empty|missing|reset|changed|easy|hard|secure|safe|forgotten|lost)(?![\w-])"
)
_PASSWORD_EN = re.compile(
    rf"(?i)\b(?:password|passwd|passphrase|pwd|passcode|pin(?: code)?)\s*(?:is|was|=|:|：)\s*(?!{_NOT_A_VALUE})\S{{2,}}"
)
_PASSWORD_ZH = re.compile(
    r"(?:密码|口令|支付密码|登录密码|开机密码|PIN码|pin码)\s*(?:是|为|[:：=])\s*(?!什么|多少|啥|不是|否|吗|对|错|正确|错误)\S{2,}"
)
_VALUE_LIKE = r"(?=\S*[0-9!@#$%^&*_\-+=.])[^\s,，。;；]{4,}"
"""A token that reads like a credential value: four or more characters with a digit or a symbol."""
_PASSWORD_NEAR = re.compile(
    rf"(?i)(?:\b(?:password|passwd|passphrase|pwd|passcode|pin(?: code| number)?)\b|密码|口令|PIN码|pin码)"
    rf"[^.。!！?？\n]{{0,30}}?(?<![\w-]){_VALUE_LIKE}"
)
"""A credential word followed closely by a value, whatever joins them ("password for home is tulip-42",
"密码 tulip4242", "bank PIN 4921")."""
_SECRET_ASSIGN = re.compile(
    r"(?i)\b(?:api[_\s-]?key|secret(?:[_\s-]?key)?|access[_\s-]?(?:key|token)|auth[_\s-]?token|token|client[_\s-]?secret)"
    r"\s*(?:is|=|:|：)\s*[\"']?[A-Za-z0-9_\-./+=]{12,}"
)
_SECRET_ZH = re.compile(r"(?:密钥|秘钥|私钥|令牌|口令码|访问码)\s*(?:是|为|[:：=])\s*[A-Za-z0-9_\-./+=]{8,}")
_CVV = re.compile(r"(?i)(?:\b(?:cvv2?|cvc2?|security code)\b|安全码|卡背后三位)\s*(?:is|是|为|[:：=])?\s*\d{3,4}\b")
_OTP = re.compile(r"(?i)(?:验证码|动态码|校验码|\bverification code\b|\bone[- ]time code\b|\botp\b)\s*(?:is|是|为|[:：=])?\s*\d{4,8}\b")

_ID_CANDIDATE = re.compile(r"(?<![0-9A-Za-z])\d{17}[\dXx](?![0-9A-Za-z])")
_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CODES = "10X98765432"
_CARD_CANDIDATE = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")
_CARD_PREFIX = re.compile(r"^(?:4|5[1-5]|2[2-7]|3[47]|35|6011|65|62|30[0-5]|36|38)")
_LONG_TOKEN = re.compile(r"(?<![A-Za-z0-9_\-+/=])[A-Za-z0-9_\-+/=]{32,}(?![A-Za-z0-9_\-+/=])")


def _first_match(patterns: list[tuple[re.Pattern[str], str]], text: str) -> Rejection | None:
    for pattern, reason in patterns:
        m = pattern.search(text)
        if m:
            return Rejection(kind="secret", reason=reason, span=m.span())
    return None


def _credentials(text: str) -> Rejection | None:
    for pattern, reason in (
        (_PASSWORD_EN, "looks like a password"),
        (_PASSWORD_ZH, "looks like a password"),
        (_PASSWORD_NEAR, "looks like a password"),
        (_SECRET_ASSIGN, "looks like an API key or token"),
        (_SECRET_ZH, "looks like a secret key"),
        (_CVV, "looks like a card security code"),
        (_OTP, "looks like a verification code"),
    ):
        m = pattern.search(text)
        if m:
            return Rejection(kind="secret", reason=reason, span=m.span())
    return None


def is_chinese_id_number(number: str) -> bool:
    """An 18-character resident ID: a real birth date at 7–14 and a valid ISO 7064 check character."""
    if len(number) != 18 or not number[:17].isdigit():
        return False
    try:
        born = date(int(number[6:10]), int(number[10:12]), int(number[12:14]))
    except ValueError:
        return False
    if not date(1900, 1, 1) <= born <= date.today():
        return False
    total = sum(int(d) * w for d, w in zip(number[:17], _ID_WEIGHTS, strict=True))
    return _ID_CODES[total % 11] == number[17].upper()


def luhn_valid(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _numbers(text: str) -> Rejection | None:
    for m in _ID_CANDIDATE.finditer(text):
        if is_chinese_id_number(m.group()):
            return Rejection(kind="secret", reason="looks like an ID card number", span=m.span())
    for m in _CARD_CANDIDATE.finditer(text):
        digits = re.sub(r"[ -]", "", m.group())
        if 13 <= len(digits) <= 19 and _CARD_PREFIX.match(digits) and luhn_valid(digits):
            return Rejection(kind="secret", reason="looks like a bank card number", span=m.span())
    return None


def _entropy(token: str) -> float:
    counts = Counter(token)
    return -sum(c / len(token) * math.log2(c / len(token)) for c in counts.values())


def _random_token(text: str) -> Rejection | None:
    """A long run of mixed letters and digits with high entropy (base64 secrets); hex hashes stay below."""
    for m in _LONG_TOKEN.finditer(text):
        token = m.group()
        if any(c.isdigit() for c in token) and any(c.isalpha() for c in token) and _entropy(token) > 4.2:
            return Rejection(kind="secret", reason="looks like a secret token", span=m.span())
    return None


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


_CHECKS: tuple[_Check, ...] = (
    lambda t: _first_match(_KEY_PATTERNS, t),
    _credentials,
    _numbers,
    _random_token,
    _injection,
)


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


def redact_secrets(text: str, *, limit: int = 20) -> str:
    """``text`` with every secret the gates find masked (for what must be kept, such as history).

    A secret the gates cannot locate masks the whole text.
    """
    for _ in range(limit):
        rejection = check_memory_text(text)
        if rejection is None or rejection.kind != "secret":
            return text
        start, end = rejection.span
        if end <= start:
            return f"[redacted: {rejection.reason}]"
        text = rejection.redact(text)
    return "[redacted: too many secrets]"
