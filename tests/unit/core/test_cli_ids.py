"""Ids by unique prefix (like git) and the shortest unique prefix shown in listings."""

from __future__ import annotations

import pytest

from saber.cli.ids import resolve, shortest_unique
from saber.cli.output import CLIError

IDS = ["e02ffd2545484c11aa", "e02ffd2599999c11bb", "7a1b2c3d4e5f60718293"]


def test_full_id_and_unique_prefix() -> None:
    assert resolve("7a1b", IDS, "document") == IDS[2]
    assert resolve(IDS[0], IDS, "document") == IDS[0]
    assert resolve("e02ffd2545", IDS, "document") == IDS[0]


def test_ambiguous_unknown_and_empty_prefixes_are_errors() -> None:
    with pytest.raises(CLIError, match="ambiguous: it starts 2 ids") as ambiguous:
        resolve("e02ffd25", IDS, "document")
    assert ambiguous.value.code == 2
    with pytest.raises(CLIError, match="no document with id 'zz'") as unknown:
        resolve("zz", IDS, "document")
    assert unknown.value.code == 1
    with pytest.raises(CLIError, match="empty task id"):
        resolve("  ", IDS, "task")


def test_shortest_unique_prefixes_resolve_back() -> None:
    short = shortest_unique(IDS)
    assert short[IDS[2]] == "7a1b2c3d"  # at least 8 characters
    assert short[IDS[0]] == "e02ffd254" and short[IDS[1]] == "e02ffd259"
    for full, prefix in short.items():
        assert resolve(prefix, IDS, "document") == full
