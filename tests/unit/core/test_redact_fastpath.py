"""Redaction's fast path: text that no rule can match is returned without running the rules, and
that shortcut never lets a secret through. Every rule's matches, generated from the rule itself,
must reach the rules (in any case, with the characters that case-insensitive matching takes for
ASCII letters), so a trigger left out of the fast path's list is a failing test, not a leak."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from saber import redact as redact_module
from saber.redact import MARK, first_secret, redact, redact_value

RULES: list[re.Pattern[str]] = [
    *(pattern for pattern, _ in redact_module._KEY_PATTERNS),
    *(pattern for pattern, _ in redact_module._CREDENTIALS),
    redact_module._ID_CANDIDATE,
    redact_module._CARD_CANDIDATE,
    redact_module._LONG_TOKEN,
]


def _rules_match(folded: str) -> bool:
    return any(True for find in redact_module._FINDERS for _ in find(folded))


@pytest.mark.parametrize(
    "rule", RULES, ids=[f"rule{i}" for i in range(len(RULES))]
)  # plain ids: mutmut passes them on a command line
# The same examples every run and no health check (a generated PEM block is large): mutation testing
# runs this once per mutant, under load, and it must fail only for a mutant that lets a secret through.
@settings(max_examples=30, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_text_a_rule_matches_reaches_the_rules(rule: re.Pattern[str], data: st.DataObject) -> None:
    text = data.draw(st.from_regex(rule))
    folded = unicodedata.normalize("NFKC", text)
    if _rules_match(folded):
        assert redact_module._may_hold_secret(folded), text
        assert redact(text) != text
        assert first_secret(text) is not None


@pytest.mark.parametrize(
    "secret",
    [
        "pın is hunter22",  # dotless ı: the rules match it case-insensitively as "pin"
        "PİN is hunter22",  # dotted capital İ
        "ſecret=abcdefabcdef12345",  # long s (folded to "s" by NFKC)
        "API_KEY=abcdefabcdef12345",
        "my card is 4532 0151 1283 0366",
        "密码是 tulip4242",
        "ghp_" + "a1" * 18,
        "see -----BEGIN RSA PRIVATE KEY----- MIIEow",
        "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zC",  # a random token of exactly 32 characters, alone
        "token aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zC",
    ],
)
def test_secrets_in_any_case_are_still_masked(secret: str) -> None:
    assert redact(secret) != secret
    assert MARK in redact(secret)
    assert first_secret(secret) is not None


@pytest.mark.parametrize(
    "text",
    [
        "Hel",
        "lo! This is",
        " the fake model answering your question in a few short words.",
        "北京今天晴，最高气温 12 度。",
        "Call me at 10:30 tomorrow, room 4521.",
    ],
)
def test_ordinary_text_comes_back_as_it_was(text: str) -> None:
    assert not redact_module._may_hold_secret(unicodedata.normalize("NFKC", text))
    assert redact(text) is text
    assert first_secret(text) is None
    assert redact_value({"content": text, "mode": "chat"}) == {"content": text, "mode": "chat"}


def test_a_credential_key_is_masked_every_time_it_is_asked() -> None:
    """The key check is remembered per key: asking again gives the same answer, never a stale one."""
    for _ in range(3):
        assert redact_value({"db_password": "plain words", "max_tokens": 5}) == {
            "db_password": MARK,
            "max_tokens": 5,
        }


def test_blank_text_of_any_length_holds_no_secret() -> None:
    for blank in ("", " ", " " * 31, " " * 32, "\n\t " * 40):
        assert first_secret(blank) is None
        assert redact(blank) == blank
