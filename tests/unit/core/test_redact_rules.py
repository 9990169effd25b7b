"""The redaction's rules one by one, as a user meets them: a number that only looks like an ID card
or a bank card is kept, a real one is masked; long text and data are masked off the event loop as on
it; log lines never carry a secret, whatever the arguments."""

from __future__ import annotations

import hashlib
import io
import logging
from collections.abc import Iterator
from datetime import date

import pytest

from saber import redact as redact_module
from saber.redact import (
    MARK,
    first_secret,
    install_log_redaction,
    is_chinese_id_number,
    luhn_valid,
    redact,
    redact_value,
    redacted,
    redacted_value,
)

ID_1949 = "11010519491231002X"  # born 1949-12-31, check character X
ID_LEAP = "110105200002291235"  # born 2000-02-29
CARD = "4532015112830366"  # Visa, Luhn-valid
DISCOVER = "6011000000000004"
TOKEN = "Zx9aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1yZ"  # 35 mixed characters, high entropy


@pytest.mark.parametrize("number", [ID_1949, ID_LEAP, ID_1949.lower()])
def test_a_resident_id_number_is_masked(number: str) -> None:
    assert is_chinese_id_number(number)
    assert redact(f"身份证 {number} 请核对") == f"身份证 {MARK} 请核对"
    found = first_secret(f"id {number}")
    assert found is not None and found.reason == "looks like an ID card number" and found.span == (3, 21)


def with_check(body: str) -> str:
    """17 digits and their ISO 7064 MOD 11-2 check character (GB 11643)."""
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    return body + "10X98765432"[sum(int(d) * w for d, w in zip(body, weights, strict=True)) % 11]


@pytest.mark.parametrize(("number", "why"), [
    ("110105194912310021", "the check character is wrong (X expected)"),
    (with_check("11010519491331002"), "month 13"),
    (with_check("11010519490431002"), "April has 30 days"),
    (with_check("11010519490229002"), "1949-02-29 is no date"),
    (with_check("11010519490001002"), "month 0"),
    (with_check("11010518991231123"), "born before 1900"),
    (with_check("11010520990101123"), "born in the future"),
    ("11010519491231002", "17 characters"),
    (with_check("11010519491231002") + "1", "19 characters"),
    ("1101051949123100XX", "a letter before the check character"),
])
def test_a_number_that_only_looks_like_an_id_is_kept(number: str, why: str) -> None:
    assert not is_chinese_id_number(number), why
    assert redact(f"order {number}") == f"order {number}", why


def test_the_birth_date_bounds_of_an_id_number() -> None:
    assert is_chinese_id_number(with_check(f"110105{date.today():%Y%m%d}123")), "born today"
    assert is_chinese_id_number(with_check("11010519000101123")), "born on 1900-01-01"
    assert not is_chinese_id_number(with_check("11010518991231123")), "born on 1899-12-31"


@pytest.mark.parametrize("written", [CARD, "4532 0151 1283 0366", "4532-0151-1283-0366", DISCOVER, "378282246310005",
                                     "4222222222222", "6011000000000000001"])  # 15, 13 and 19 digits too
def test_a_bank_card_number_is_masked_however_it_is_written(written: str) -> None:
    assert redact(f"card {written} expires") == f"card {MARK} expires"
    found = first_secret(f"pay with {written}")
    assert found is not None and found.reason == "looks like a bank card number"


@pytest.mark.parametrize(("number", "why"), [
    ("4532015112830367", "the Luhn check fails"),
    ("9999999999999995", "Luhn-valid, but no card network starts with 9"),
    ("1234567890128", "Luhn-valid 13 digits, but no card network starts with 1"),
    ("453201511283", "12 digits"),
    ("45320151128303664532", "20 digits"),
    (f"ab{CARD}", "inside a longer token"),
    (f"{CARD}-ff", "inside a hex-like id"),
])
def test_a_number_that_only_looks_like_a_card_is_kept(number: str, why: str) -> None:
    assert redact(f"ref {number} ok") == f"ref {number} ok", why


def test_the_luhn_check() -> None:
    assert luhn_valid("79927398713") and not luhn_valid("79927398710")
    assert luhn_valid("0") and not luhn_valid("1") and luhn_valid("18") and luhn_valid("59")
    assert luhn_valid("91") and not luhn_valid("95")


def test_a_random_token_is_masked_a_hash_or_a_word_is_not() -> None:
    assert redact(f"secret {TOKEN} end") == f"secret {MARK} end"
    found = first_secret(TOKEN)
    assert found is not None and found.reason == "looks like a secret token" and found.span == (0, len(TOKEN))
    sha = hashlib.sha256(b"x").hexdigest()
    kept = [sha, "a" * 40, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ", "12345678901234567890123456789012345",
            TOKEN[:31]]
    for text in kept:
        assert redact(f"value {text}") == f"value {text}"


def test_full_width_characters_cannot_hide_a_key() -> None:
    wide = "ｓｋ－ｌｉｖｅ－ａｂｃ１２３ｄｅｆ４５６ｇｈｉ７８９ｊｋｌ"
    assert "abc123" not in redact(f"key {wide}") and MARK in redact(f"key {wide}")
    found = first_secret(f"key {wide}")
    assert found is not None and found.reason == "looks like an API key" and found.span == (4, len(wide) + 4)


def test_full_width_text_around_a_secret_is_kept_as_written() -> None:
    assert redact("ｈｅｌｌｏ sk-live-abc123def456ghi789jkl") == f"ｈｅｌｌｏ {MARK}"
    assert redact("ﬁle sk-live-abc123def456ghi789jkl") == f"file {MARK}", "folding changed the length: folded text"
    found = first_secret("ﬁle sk-live-abc123def456ghi789jkl")
    assert found is not None and found.reason == "looks like an API key" and found.span == (0, 33), "the whole text"


def test_blank_text_is_returned_as_it_is() -> None:
    for text in ("", " ", "\n\t "):
        assert redact(text) == text
    assert first_secret("") is None


def test_secrets_that_overlap_are_one_mark_and_neighbours_stay_apart() -> None:
    assert redact(f"password: {TOKEN}").count(MARK) == 1
    assert redact(f"{CARD} {DISCOVER}") == f"{MARK} {MARK}"
    assert redact(f"{CARD} and {ID_1949}") == f"{MARK} and {MARK}"


def test_the_first_secret_is_found_in_order_and_where_it_is() -> None:
    text = f"first {CARD} then sk-live-abc123def456ghi789jkl"
    found = first_secret(text)
    assert found is not None and found.reason == "looks like an API key"  # key shapes are asked first
    start, end = found.span
    assert text[start:end] == "sk-live-abc123def456ghi789jkl"


@pytest.mark.parametrize("where", [0, 8_100, 8_190, 16_000, 40_000])
def test_a_secret_anywhere_in_a_long_text_is_masked_and_placed(where: str | int) -> None:
    position = int(where)
    text = "x " * (position // 2) + "sk-live-abc123def456ghi789jkl" + " y" * 12_000
    out = redact(text)
    assert "abc123" not in out and out.count(MARK) == 1 and out.index(MARK) == position
    found = first_secret(text)
    assert found is not None and found.span == (position, position + 29)


def test_a_secret_across_a_window_boundary_is_masked() -> None:
    for position in range(7_650, 7_700, 7):  # the next window starts at 7,680
        text = "a " * (position // 2) + "sk-live-abc123def456ghi789jkl" + " b" * 6_000
        assert "abc123" not in redact(text) and first_secret(text) is not None


def test_data_keeps_its_shape() -> None:
    assert redact_value(("a", f"card {CARD}")) == ["a", f"card {MARK}"]
    assert redact_value([{"token": True}, {"token": ""}, {"token": MARK}, {"token": None}, {"token": 7}]) == [
        {"token": True}, {"token": ""}, {"token": MARK}, {"token": None}, {"token": MARK}]
    assert redact_value({1: "x", "refresh_token": "abc"}) == {1: "x", "refresh_token": MARK}
    assert redact_value({"Authorization": "Basic dXNlcg==", "cookie": "sid=1"}) == {"Authorization": MARK, "cookie": MARK}
    assert redact_value({"max_tokens": 100, "tokens": "many", "password_policy": "long"}) == {
        "max_tokens": 100, "tokens": "many", "password_policy": "long"}
    assert redact_value({"secret": ["a", "b"]}) == {"secret": ["a", "b"]}
    assert redact_value(3.5) == 3.5 and redact_value(None) is None


async def test_long_text_and_big_data_are_masked_too() -> None:
    secret = "sk-live-abc123def456ghi789jkl"
    for size in (10, 4_096, 4_097, 50_000):
        text = ("z" * size)[: size - len(secret) - 1] + " " + secret if size > 40 else f"k {secret}"
        out = await redacted(text)
        assert secret not in out and out.endswith(MARK)
    short = {"note": f"k {secret}", "n": 1}
    assert await redacted_value(short) == {"note": f"k {MARK}", "n": 1}
    many = {"rows": [{"text": "w" * 100, "key": secret} for _ in range(100)], "password": "p"}
    out = await redacted_value(many)
    assert out["password"] == MARK and all(row["key"] == MARK for row in out["rows"])
    wide = {f"k{i}": [f"v {secret}"] for i in range(5_000)}
    assert all(v == [f"v {MARK}"] for v in (await redacted_value(wide)).values())
    assert await redacted_value(f"k {secret}") == f"k {MARK}"
    assert await redacted_value(("t", 1)) == ["t", 1]


@pytest.fixture
def log(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[logging.Logger, io.StringIO]]:
    """Log redaction installed as in a new process (the one a test process may have is set aside)."""
    kept = logging.getLogRecordFactory()
    monkeypatch.setattr(redact_module, "_installed", [])
    logging.setLogRecordFactory(logging.LogRecord)
    install_log_redaction()
    installed = logging.getLogRecordFactory()
    install_log_redaction()
    assert logging.getLogRecordFactory() is installed, "a second call changes nothing"
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    logger = logging.getLogger("saber.test_redact_rules")
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.INFO)
    try:
        yield logger, out
    finally:
        logger.removeHandler(handler)
        logging.setLogRecordFactory(kept)


def test_log_arguments_keep_their_type_and_lose_their_secrets(log: tuple[logging.Logger, io.StringIO]) -> None:
    logger, out = log
    logger.info("took %d ms, %.1f%% done, ok=%s, none=%s", 42, 99.5, True, None)
    logger.info("user %(user)s key %(key)s count %(n)d", {"user": "ann", "key": "sk-live-abc123def456ghi789jkl", "n": 3})
    logger.info("object %s", ValueError("password is tulip-42-x"))
    logger.info("password: %s", "plainword")  # a secret only once the argument is in the message
    logger.info("no arguments, just api_key=abcd1234efgh5678ijkl")
    lines = out.getvalue().splitlines()
    assert lines[0] == "took 42 ms, 99.5% done, ok=True, none=None"
    assert lines[1] == f"user ann key {MARK} count 3"
    assert lines[2] == f"object {MARK}"
    assert lines[3] == MARK, "the line is written, masked, not lost to a format error"
    assert lines[4] == "no arguments, just " + MARK
    assert "plainword" not in out.getvalue() and "tulip" not in out.getvalue() and "abcd1234" not in out.getvalue()


def test_a_logged_traceback_is_masked_once(log: tuple[logging.Logger, io.StringIO]) -> None:
    logger, out = log
    try:
        raise RuntimeError("connect postgres://admin:pa55word@db/app")
    except RuntimeError:
        logger.exception("it failed")
    text = out.getvalue()
    assert "pa55word" not in text and "RuntimeError" in text and "Traceback" in text and MARK in text
