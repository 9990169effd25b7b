"""Issue 28, item 6: the one redaction — what it masks, what it leaves as written, and log records."""

from __future__ import annotations

import io
import logging

import pytest

from saber.redact import MARK, first_secret, install_log_redaction, redact, redact_value

JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7x2kQ\nzQ9f1bXc\n-----END RSA PRIVATE KEY-----"


@pytest.mark.parametrize(("text", "secret"), [
    ("my password is hunter2-XYZ", "hunter2-XYZ"),
    ("password: correct-horse-9", "correct-horse-9"),
    ("api_key=abcd1234efgh5678ijkl", "abcd1234efgh5678ijkl"),
    ("use sk-live-abc123def456ghi789jkl please", "sk-live-abc123def456ghi789jkl"),
    ("token ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7", "ghp_a1B2c3D4e5F6g7H8i9J0"),
    ("aws AKIAIOSFODNN7EXAMPLE here", "AKIAIOSFODNN7EXAMPLE"),
    ("slack xoxb-1234567890-abcdefghij", "xoxb-1234567890"),
    (f"the JWT {JWT}", JWT[:40]),
    ("Authorization: Bearer abcdefghijklmnop1234567890", "abcdefghijklmnop1234567890"),
    (f"key:\n{PEM}\nend", "MIIEowIBAAKCAQEA7x2kQ"),
    ("我的密码是 tulip4242，谢谢", "tulip4242"),
    ("密码：Secr3t!x", "Secr3t!x"),
    ("密钥是 AbCdEf123456789", "AbCdEf123456789"),
    ("连接 postgres://admin:pa55word@db.example.com/app", "pa55word"),
])
def test_a_secret_is_masked_and_the_rest_kept(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out
    assert MARK in out
    assert first_secret(text) is not None


@pytest.mark.parametrize("text", [
    "what does our password policy say about length?",
    "I forgot my password, how do I reset it?",
    "the password is incorrect",
    "密码策略是什么？",
    "忘记密码了怎么办",
    "max_tokens is 512 and the weather in Beijing is 21°C",
    "北京天气和时间",
])
def test_text_without_a_secret_is_returned_unchanged(text: str) -> None:
    assert redact(text) == text
    assert first_secret(text) is None


def test_every_secret_of_a_long_text_is_masked() -> None:
    keys = [f"sk-proj-{i:04d}A1b2C3d4E5f6G7h8" for i in range(50)]
    text = " and ".join(f"key {k}" for k in keys) + " filler" * 5_000
    out = redact(text)
    assert not any(k in out for k in keys)
    assert out.count(MARK) == 50 and out.endswith(" filler")


def test_identifiers_are_kept() -> None:
    task_id = "bed6ee4cb91c4532015112830366cceb5ef"[:32]
    assert redact(f"task {task_id}") == f"task {task_id}"
    assert redact_value({"task_id": "sk-live-abc123def456ghi789jkl"})["task_id"].startswith("sk-live")
    assert redact("card 4532015112830366") == f"card {MARK}"


def test_data_is_redacted_by_value_and_by_credential_key() -> None:
    value = {"username": "alice", "password": "tulip", "db_password": 1234, "api_key": "x",
             "max_tokens": 512, "usage": {"prompt_tokens": 10}, "note": ["my pwd is t0p-s3cret"], "ok": True}
    assert redact_value(value) == {
        "username": "alice", "password": MARK, "db_password": MARK, "api_key": MARK, "max_tokens": 512,
        "usage": {"prompt_tokens": 10}, "note": [f"my {MARK}"], "ok": True}


def test_log_records_are_redacted_with_their_arguments_and_tracebacks() -> None:
    install_log_redaction()
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    logger = logging.getLogger("saber.test_redact")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.error("request %s failed", "my password is hunter2-XYZ")
        logger.warning("the password is %s", "tulip-42-x")
        try:
            raise ValueError("bad api key sk-live-abc123def456ghi789jkl")
        except ValueError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    text = out.getvalue()
    assert "hunter2" not in text and "abc123def456" not in text and "tulip-42" not in text
    assert "request my [redacted] failed" in text and "ValueError" in text
