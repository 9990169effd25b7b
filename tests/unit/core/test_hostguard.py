"""The Host allow-list's parsing: what a ``Host`` header names, and which names are allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from saber.config import Settings
from saber.server.hostguard import AllowedHosts, split_host


@pytest.mark.parametrize(("value", "expected"), [
    ("LocalHost:8000", ("localhost", 8000)), ("[::1]:8000", ("::1", 8000)), ("[::1]", ("::1", None)),
    ("example.com.", ("example.com", None)), ("a:1:2", None), ("[::1", None), ("[::1]x", None), ("h:99999x", None),
    ("h:", ("h", None)), ("", None), ("evil.example@127.0.0.1", None), ("h:²", None), ("a/b", None),
])
def test_a_host_header_is_split_into_name_and_port(value: str, expected: tuple[str, int | None] | None) -> None:
    assert split_host(value) == expected


def test_the_address_saber_serve_was_given_is_allowed_and_others_are_not() -> None:
    hosts = AllowedHosts([], bound="MyBox.lan")
    assert hosts.allows("mybox.lan", "10.0.0.5") and hosts.allows("10.0.0.5", "10.0.0.5")
    assert hosts.allows("localhost", None) and hosts.allows("127.9.9.9", None) and hosts.allows("::1", None)
    assert not hosts.allows("evil.example", "10.0.0.5") and not hosts.allows("10.0.0.6", "10.0.0.5")
    assert not hosts.allows("localhost.evil.example", None)


def test_allowed_hosts_and_keyless_admin_come_from_the_environment(monkeypatch: pytest.MonkeyPatch,
                                                                    tmp_path: Path) -> None:
    monkeypatch.setenv("SABER_HOME", str(tmp_path))
    monkeypatch.setenv("SABER_SERVER_ALLOWED_HOSTS", "saber.example.com, .corp.example")
    monkeypatch.setenv("SABER_SERVER_KEYLESS_ADMIN", "true")
    settings = Settings.load()
    assert settings.server.allowed_hosts == ["saber.example.com", ".corp.example"] and settings.server.keyless_admin
    hosts = AllowedHosts(settings.server.allowed_hosts)
    assert hosts.allows("ai.corp.example", None) and not hosts.allows("saber.example.com.evil", None)
    monkeypatch.delenv("SABER_SERVER_KEYLESS_ADMIN")
    assert not Settings.load().server.keyless_admin  # off unless said
