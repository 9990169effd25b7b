"""Secrets found in text and masked: the one redaction applied wherever Saber persists or serves
what a user wrote or a tool returned (checkpoints, task records, event logs, history, logs).

``redact(text)`` masks every secret with ``[redacted]``; ``redact_value(value)`` does the same in
every string of JSON-like data and masks the value of a key that names a credential
(``{"password": ...}``). ``first_secret(text)`` is the memory gate's question: the first secret, if
any, with a reason a user can read ("looks like an API key").

What counts as a secret: well-known token shapes (``sk-…``, ``ghp_…``, ``AKIA…``, ``xoxb-…``,
JWTs, Bearer tokens, PEM private keys, URLs with a password), a credential word with its value in
English or Chinese ("password is x", "api_key=x", "密码是 x", "密码：x"), card and ID numbers whose
checksums hold, and long high-entropy tokens. The rules lean towards precision on ordinary prose: a
password needs a value after "is" / "是" / ":", so "password policy" stays as written.

Linear in the text's length (about 2 µs a character): text longer than ``INLINE_CHARS`` is scanned
in a worker thread by the async helpers, so the event loop keeps serving meanwhile. A live run still
holds the secret in memory (the tool that needs it gets it); only what is stored or served is masked.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

__all__ = [
    "MARK",
    "Finding",
    "first_secret",
    "install_log_redaction",
    "redact",
    "redact_value",
    "redacted",
    "redacted_value",
]

MARK = "[redacted]"
INLINE_CHARS = 4_096


@dataclass(frozen=True, kw_only=True, slots=True)
class Finding:
    """A secret found in a text: why it reads as one, and where (in the NFKC-folded text)."""

    reason: str
    span: tuple[int, int]


_KEY_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----(?:[\s\S]{0,8000}?-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----)?"),
     "looks like a private key"),
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

_CREDENTIALS: list[tuple[re.Pattern[str], str]] = [
    (_PASSWORD_EN, "looks like a password"),
    (_PASSWORD_ZH, "looks like a password"),
    (_PASSWORD_NEAR, "looks like a password"),
    (_SECRET_ASSIGN, "looks like an API key or token"),
    (_SECRET_ZH, "looks like a secret key"),
    (_CVV, "looks like a card security code"),
    (_OTP, "looks like a verification code"),
]

_ID_CANDIDATE = re.compile(r"(?<![0-9A-Za-z])\d{17}[\dXx](?![0-9A-Za-z])")
_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CODES = "10X98765432"
_CARD_CANDIDATE = re.compile(r"(?<![0-9A-Za-z_-])(?:\d[ -]?){12,18}\d(?![0-9A-Za-z_-])")
"""13 to 19 digits standing alone: not a run of digits inside a hex id."""
_CARD_PREFIX = re.compile(r"^(?:4|5[1-5]|2[2-7]|3[47]|35|6011|65|62|30[0-5]|36|38)")
_LONG_TOKEN = re.compile(r"(?<![A-Za-z0-9_\-+/=])[A-Za-z0-9_\-+/=]{32,}(?![A-Za-z0-9_\-+/=])")


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


def _entropy(token: str) -> float:
    counts = Counter(token)
    return -sum(c / len(token) * math.log2(c / len(token)) for c in counts.values())


def _patterns(patterns: list[tuple[re.Pattern[str], str]]) -> Callable[[str], Iterator[Finding]]:
    def find(text: str) -> Iterator[Finding]:
        for pattern, reason in patterns:
            for m in pattern.finditer(text):
                yield Finding(reason=reason, span=m.span())
    return find


def _numbers(text: str) -> Iterator[Finding]:
    for m in _ID_CANDIDATE.finditer(text):
        if is_chinese_id_number(m.group()):
            yield Finding(reason="looks like an ID card number", span=m.span())
    for m in _CARD_CANDIDATE.finditer(text):
        digits = re.sub(r"[ -]", "", m.group())
        if 13 <= len(digits) <= 19 and _CARD_PREFIX.match(digits) and luhn_valid(digits):
            yield Finding(reason="looks like a bank card number", span=m.span())


def _random_tokens(text: str) -> Iterator[Finding]:
    """Long runs of mixed letters and digits with high entropy (base64 secrets); hex hashes stay below."""
    for m in _LONG_TOKEN.finditer(text):
        token = m.group()
        if any(c.isdigit() for c in token) and any(c.isalpha() for c in token) and _entropy(token) > 4.2:
            yield Finding(reason="looks like a secret token", span=m.span())


_FINDERS: tuple[Callable[[str], Iterator[Finding]], ...] = (
    _patterns(_KEY_PATTERNS), _patterns(_CREDENTIALS), _numbers, _random_tokens,
)

_TRIGGERS = (
    "-----begin", "sk-", "_live_", "_test_", "akia", "asia", "github_pat_", "glpat-", "xox", "aiza", "hf_", "eyj",
    "bearer", "://",
    "pass", "pwd", "pin", "密码", "口令",
    "api", "secret", "access", "token", "密钥", "秘钥", "私钥", "令牌", "访问码",
    "cvv", "cvc", "security code", "安全码", "卡背后三位",
    "验证码", "动态码", "校验码", "verification code", "time code", "otp",
)
"""Lower-case text that every rule's match holds (a key shape's fixed part, a credential word)."""
_TRIGGER = re.compile("|".join(map(re.escape, _TRIGGERS)) + r"|gh[pousr]_|\d(?:[ -]?\d){12}")
"""Any trigger, a GitHub token's prefix, or 13 digits one space or dash apart at most (every card
and ID number holds such a run), in the lower-cased text."""
_CASE_TWINS = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})
"""Characters that the rules' case-insensitive matching takes for an ASCII letter but ``str.lower``
does not turn into one (İ, dotless ı, long ſ, the Kelvin sign)."""
_LONG_RUN = 32
"""``_LONG_TOKEN``'s shortest match: such a token lies in a run of that many non-space characters."""


def _may_hold_secret(folded: str) -> bool:
    """False only when no rule can match ``folded`` (the NFKC-folded text), so the rules need not
    run: the common case of a streamed token or an ordinary answer costs one regex search. Every
    rule's match holds a ``_TRIGGER`` (in any case) or is a run of ``_LONG_RUN`` non-space
    characters. True does not mean a secret is there."""
    lowered = (folded if folded.isascii() else folded.translate(_CASE_TWINS)).lower()
    if _TRIGGER.search(lowered) is not None:
        return True
    return len(folded) >= _LONG_RUN and max(map(len, folded.split()), default=0) >= _LONG_RUN


_WINDOW = 8_192
_OVERLAP = 512
"""Long text is scanned in overlapping windows: every rule's match is far shorter than the overlap
(a longer secret token still matches in the window it starts in), so nothing is missed, each regex
call stays short, and a thread scanning hands the GIL back between windows."""


def _windows(text: str) -> Iterator[tuple[int, str]]:
    for offset in range(0, max(len(text) - _OVERLAP, 1), _WINDOW - _OVERLAP):
        yield offset, text[offset:offset + _WINDOW]


def first_secret(text: str) -> Finding | None:
    """The first secret the rules find (rules in order, window by window), or None.

    Full-width characters are folded (NFKC) first so "ｓｋ－..." cannot slip through; when folding
    changed the text's length, the span covers the whole text.
    """
    folded = unicodedata.normalize("NFKC", text)
    if not _may_hold_secret(folded):
        return None
    for offset, window in _windows(folded):
        for find in _FINDERS:
            for found in find(window):
                if len(folded) != len(text):
                    return Finding(reason=found.reason, span=(0, len(text)))
                start, end = found.span
                return Finding(reason=found.reason, span=(start + offset, end + offset))
    return None


def _spans(text: str) -> list[tuple[int, int]]:
    """Every secret's span in ``text``, merged where they overlap."""
    spans = sorted((f.span[0] + offset, f.span[1] + offset)
                   for offset, window in _windows(text) for find in _FINDERS for f in find(window))
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def redact(text: str) -> str:
    """``text`` with every secret replaced by ``[redacted]``; text without one is returned as is.

    Matching is done on the NFKC-folded text; when folding changed the text's length the folded
    text is what comes back (masked), so a full-width secret cannot slip through.
    """
    if not text or text.isspace():
        return text
    folded = unicodedata.normalize("NFKC", text)
    if not _may_hold_secret(folded):
        return text
    spans = _spans(folded)
    if not spans:
        return text
    base = text if len(folded) == len(text) else folded
    parts: list[str] = []
    position = 0
    for start, end in spans:
        parts += [base[position:start], MARK]
        position = end
    parts.append(base[position:])
    return "".join(parts)


_CREDENTIAL_KEY = re.compile(
    r"(?i)^(?:.*[_-])?(?:password|passwd|passphrase|pwd|passcode|secret|client[_-]?secret|api[_-]?key|apikey|"
    r"access[_-]?key|private[_-]?key|token|access[_-]?token|refresh[_-]?token|auth[_-]?token|authorization|cookie|"
    r"密码|口令|密钥|令牌)$"
)
"""A key whose value is a credential whatever it looks like: ``password``, ``db_password``, ``api_key``,
``token``; not ``max_tokens`` or ``prompt_tokens``."""


IDENTIFIER_KEYS = frozenset({"id", "task_id", "user_id", "document_id", "node_id", "request_id", "run_id",
                             "race_group", "depends_on", "tool", "tool_name", "type", "status", "mode"})
"""Keys whose values are identifiers and names the system relies on (to find a task, check its
owner): kept as they are, even when one happens to look like a token."""


def redact_value(value: Any) -> Any:
    """``value`` (JSON-like data) with every string redacted and every credential key's value masked;
    identifiers (``IDENTIFIER_KEYS``) are kept. Dicts and lists are copied; other values returned as is."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {k: (v if k in IDENTIFIER_KEYS else MARK if _is_credential(k, v) else redact_value(v))
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v) for v in value]
    return value


def _is_credential(key: object, value: object) -> bool:
    return isinstance(key, str) and _credential_key(key) and isinstance(value, (str, int)) \
        and not isinstance(value, bool) and value not in ("", MARK)


@functools.lru_cache(maxsize=1024)
def _credential_key(key: str) -> bool:
    """``_CREDENTIAL_KEY`` matches ``key``; remembered: every event asks it of the same few keys."""
    return _CREDENTIAL_KEY.match(key) is not None


def _size(value: Any, limit: int = INLINE_CHARS) -> int:
    """Roughly how many characters ``value`` holds, counting up to ``limit``."""
    if isinstance(value, str):
        return len(value)
    total = 0
    stack = [value]
    while stack and total <= limit:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, Mapping):
            stack.extend(item.values())
            total += len(item)
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return total


async def redacted(text: str) -> str:
    """``redact(text)``, in a worker thread when the text is long."""
    if len(text) <= INLINE_CHARS:
        return redact(text)
    return await asyncio.to_thread(redact, text)


async def redacted_value(value: Any) -> Any:
    """``redact_value(value)``, in a worker thread when it holds much text."""
    if _size(value) <= INLINE_CHARS:
        return redact_value(value)
    return await asyncio.to_thread(redact_value, value)


def _log_arg(value: Any) -> Any:
    """A log message's argument, redacted: numbers as they are, anything else as its redacted text."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return redact(value if isinstance(value, str) else str(value))


_installed: list[Callable[..., logging.LogRecord]] = []


def install_log_redaction() -> None:
    """Make every log record carry redacted text: its message, its arguments and its traceback. Installed once per process, by the CLI and the server; idempotent."""
    if _installed:
        return
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if isinstance(record.args, tuple):  # kept a tuple: formatters such as uvicorn's unpack it
            record.args = tuple(_log_arg(a) for a in record.args)
        elif isinstance(record.args, Mapping):
            record.args = {k: _log_arg(v) for k, v in record.args.items()}
        message = None
        if record.args:
            try:
                message = record.getMessage()
            except Exception:  # a malformed format string: left for the handler to report
                message = None
        if message is not None:
            # The whole message is what is masked: a format that reads as a secret on its own
            # ("password: %s") masked before formatting would lose its placeholder and the line.
            if (masked := redact(message)) != message:
                record.msg, record.args = masked, ()
        elif isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        return record

    _installed.append(previous)
    logging.setLogRecordFactory(factory)
