"""Workspace paths under generated input: every path a model writes either lands inside a root
(and is shown relative to it) or is refused with the reason; no '..', no absolute path outside,
no symlink out, no look-alike folder next to a root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from saber.tools.errors import ToolArgumentError
from saber.tools.system.workspace import Workspace

segments = st.lists(st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_. -]{0,8}", fullmatch=True)
                    .filter(lambda s: s.strip() == s and s not in (".", "..")), min_size=1, max_size=4)
FIXTURE = settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None, max_examples=60)


def refused(ws: Workspace, raw: str) -> str:
    with pytest.raises(ToolArgumentError) as caught:
        ws.locate(raw, field="file", tool="read_file")
    assert caught.value.tool == "read_file"
    return str(caught.value)


@FIXTURE
@given(segments)
def test_a_relative_path_lands_inside_the_first_root_and_is_shown_relative(tmp_path: Path, parts: list[str]) -> None:
    ws = Workspace([tmp_path / "a", tmp_path / "b"])
    found = ws.locate("/".join(parts))
    assert found.root == ws.roots[0] and found.path == ws.roots[0].joinpath(*parts)
    assert found.shown == "/".join(parts) and ws.roots[0] in found.path.parents


@FIXTURE
@given(segments, st.integers(min_value=0, max_value=3))
def test_any_dot_dot_is_refused_wherever_it_stands(tmp_path: Path, parts: list[str], at: int) -> None:
    ws = Workspace([tmp_path / "a"])
    parts = [*parts[:at], "..", *parts[at:]]
    assert refused(ws, "/".join(parts)).startswith("file: '..' is not allowed (paths stay inside the workspace)")
    assert refused(ws, str(ws.roots[0].joinpath(*parts))).startswith("file: '..' is not allowed")


@FIXTURE
@given(segments)
def test_an_absolute_path_is_taken_in_the_root_that_holds_it_and_refused_outside_them(tmp_path: Path,
                                                                                     parts: list[str]) -> None:
    ws = Workspace([tmp_path / "a", tmp_path / "b"])
    inside = ws.locate(str(ws.roots[1].joinpath(*parts)))
    assert inside.root == ws.roots[1] and inside.shown == "/".join(parts)
    for outside in (tmp_path.joinpath("elsewhere", *parts), tmp_path / ("a-evil/" + "/".join(parts)), Path("/etc/passwd")):
        message = refused(ws, str(outside))
        assert message == f"file: {str(outside)!r} is outside the workspace ({ws.roots[0]}, {ws.roots[1]})"


def test_a_root_itself_is_shown_as_dot(tmp_path: Path) -> None:
    ws = Workspace([tmp_path / "a", tmp_path / "b"])
    for raw in ("", "  ", ".", str(tmp_path / "a")):
        assert ws.locate(raw).shown == "." and ws.locate(raw).path == ws.roots[0]
    assert ws.locate(str(tmp_path / "b")).root == ws.roots[1] and ws.locate(str(tmp_path / "b")).shown == "."
    assert ws.locate(" x ").shown == "x"


def test_a_symlink_out_is_refused_and_one_that_stays_inside_is_followed(tmp_path: Path) -> None:
    ws = Workspace([tmp_path / "a"])
    ws.ensure()
    (tmp_path / "secret").mkdir()
    os.symlink(tmp_path / "secret", ws.roots[0] / "out")
    (ws.roots[0] / "real").mkdir()
    os.symlink(ws.roots[0] / "real", ws.roots[0] / "alias")
    assert refused(ws, "out/key") == "file: 'out/key' leads outside the workspace through a symlink"
    assert refused(ws, str(ws.roots[0] / "out")) == f"file: {str(ws.roots[0] / 'out')!r} leads outside the workspace through a symlink"
    assert ws.locate("alias/f.txt").shown == "real/f.txt"


def test_a_nul_character_or_no_root_at_all_is_refused(tmp_path: Path) -> None:
    ws = Workspace([tmp_path / "a"])
    assert refused(ws, "a\x00b") == "file: contains a NUL character"
    with pytest.raises(ValueError, match="at least one root"):
        Workspace([])


def test_roots_are_made_on_demand_and_named_in_full(tmp_path: Path) -> None:
    ws = Workspace([tmp_path / "x" / "y", tmp_path / "z"])
    assert not ws.roots[0].exists()
    ws.ensure()
    assert ws.roots[0].is_dir() and ws.roots[1].is_dir() and ws.describe() == f"{ws.roots[0]}, {ws.roots[1]}"


def test_a_root_given_through_a_symlink_or_with_home_is_its_real_folder(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    monkeypatch.setenv("HOME", str(tmp_path))
    ws = Workspace([Path("~/link")])
    assert ws.roots == [tmp_path / "real"]
    assert ws.locate(str(tmp_path / "link" / "f")).shown == "f", "the root as the settings name it"
    assert ws.locate("~/real/f").shown == "f"
