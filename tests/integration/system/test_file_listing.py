"""What a user reads from ``list_dir`` and ``search_files``: the exact listing of a known tree
(folders first, sizes, links, the counts and the cut), the exact hits of a search (with ripgrep
and without), the notice when hits or lines were cut, and the errors that name the problem."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from saber.tools import ToolArgumentError, ToolError
from saber.tools.base import Tool
from saber.tools.system import files
from saber.tools.system.files import MAX_LINE, MAX_LIST, MAX_MATCHES, FileLimits, file_tools
from saber.tools.system.workspace import Workspace


def tools_for(root: Path, **limits: int) -> dict[str, Tool]:
    return {t.name: t for t in file_tools(Workspace([root]), FileLimits(**limits), write=True)}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    return root


@pytest.fixture(params=["ripgrep", "python"])
def search(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each search test runs with ripgrep and with the Python fallback (no ``rg`` on PATH)."""
    if request.param == "python":
        monkeypatch.setattr(files.shutil, "which", lambda name: None)
    return str(request.param)


async def listing(root: Path, path: str = ".") -> str:
    return str(await tools_for(root)["list_dir"].run({"path": path}))


async def found(root: Path, **args: str) -> str:
    return str(await tools_for(root)["search_files"].run(args))


# list_dir


async def test_a_listing_shows_folders_first_then_files_with_sizes_and_links(root: Path) -> None:
    (root / "zeta").mkdir()
    (root / "alpha").mkdir()
    (root / "b.txt").write_bytes(b"x" * 1234)
    (root / "a.txt").write_bytes(b"")
    (root / "c.md").write_bytes(b"x" * 1_234_567)
    (root / "link").symlink_to("a.txt")
    (root / "away").symlink_to(root.parent)
    (root / "alpha" / "inner.txt").write_text("hidden from the top listing", encoding="utf-8")
    assert await listing(root) == "\n".join(
        [
            "./ (2 folders, 5 files)",
            "alpha/",
            "zeta/",
            "a.txt  0 B",
            "away -> (link)",
            "b.txt  1,234 B",
            "c.md  1,234,567 B",
            "link -> (link)",
        ]
    )
    assert await listing(root, "alpha") == "alpha/ (0 folders, 1 files)\ninner.txt  27 B"


async def test_an_empty_folder_says_so(root: Path) -> None:
    (root / "docs" / "empty").mkdir(parents=True)
    assert await listing(root, "docs/empty") == "docs/empty/ (0 folders, 0 files)\n(empty)"
    assert await listing(root, "docs") == "docs/ (1 folders, 0 files)\nempty/"


async def test_a_long_listing_is_cut_and_says_how_many_were_left_out(root: Path) -> None:
    many = root / "many"
    many.mkdir()
    for i in range(MAX_LIST - 1):
        (many / f"f{i:04}").write_bytes(b"")
    (many / "sub").mkdir()
    whole = (await listing(root, "many")).splitlines()
    assert whole[0] == f"many/ (1 folders, {MAX_LIST - 1} files)"
    assert len(whole) == 1 + MAX_LIST and whole[1] == "sub/" and whole[-1] == f"f{MAX_LIST - 2:04}  0 B"
    (many / "f9998").write_bytes(b"")
    (many / "f9999").write_bytes(b"")
    cut = (await listing(root, "many")).splitlines()
    assert cut[0] == f"many/ (1 folders, {MAX_LIST + 1} files)"
    assert cut[1:-1] == whole[1:] and cut[-1] == "… 2 more not shown"


async def test_an_entry_that_vanishes_while_the_folder_is_listed_is_left_out(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a.txt", "gone.txt", "z.txt"):
        (root / name).write_bytes(b"12")
    real_scandir = os.scandir

    class Vanishing:
        """The folder's entries as read, then ``gone.txt`` deleted before its size is asked."""

        def __init__(self, fd: int) -> None:
            self.listing = real_scandir(fd)

        def __enter__(self) -> Iterator[os.DirEntry[str]]:
            return self.entries()

        def entries(self) -> Iterator[os.DirEntry[str]]:
            yield from self.listing
            (root / "gone.txt").unlink()

        def __exit__(self, *exc: object) -> None:
            self.listing.close()

    monkeypatch.setattr(files.os, "scandir", Vanishing)
    assert await listing(root) == "./ (0 folders, 2 files)\na.txt  2 B\nz.txt  2 B"


async def test_listing_a_file_or_a_missing_folder_names_the_problem(root: Path) -> None:
    (root / "a.txt").write_text("a", encoding="utf-8")
    with pytest.raises(ToolError, match=r"^a.txt: is a file \(use read_file\)$"):
        await listing(root, "a.txt")
    with pytest.raises(ToolError, match="^nowhere: no such folder$"):
        await listing(root, "nowhere")


# search_files


@pytest.fixture
def notes(root: Path) -> Path:
    (root / "src" / "deep").mkdir(parents=True)
    (root / "src" / "a.py").write_text("import os\n\ndef main():\n    return os.sep\n", encoding="utf-8")
    (root / "src" / "deep" / "b.py").write_text("# os is imported elsewhere\nX = 1\n", encoding="utf-8")
    (root / "readme.md").write_text("Uses os and sys.\n", encoding="utf-8")
    (root / "blob.bin").write_bytes(b"os\x00os\x00" * 10)
    return root


async def test_hits_are_named_path_line_text_relative_to_the_root(notes: Path, search: str) -> None:
    hits = (await found(notes, pattern=r"\bos\b")).splitlines()
    assert sorted(hits) == [
        "readme.md:1:Uses os and sys.",
        "src/a.py:1:import os",
        "src/a.py:4:    return os.sep",
        "src/deep/b.py:1:# os is imported elsewhere",
    ]


async def test_a_search_in_a_folder_or_a_file_shows_only_its_hits(notes: Path, search: str) -> None:
    assert sorted((await found(notes, pattern="os", path="src")).splitlines()) == [
        "src/a.py:1:import os",
        "src/a.py:4:    return os.sep",
        "src/deep/b.py:1:# os is imported elsewhere",
    ]
    assert await found(notes, pattern="os", path="src/deep") == "src/deep/b.py:1:# os is imported elsewhere"
    assert (
        await found(notes, pattern="os", path="src/a.py")
        == "src/a.py:1:import os\nsrc/a.py:4:    return os.sep"
    )
    assert await found(notes, pattern="X", path="./src/deep/b.py") == "src/deep/b.py:2:X = 1"


async def test_a_glob_keeps_only_the_files_whose_name_matches(notes: Path, search: str) -> None:
    assert await found(notes, pattern="os", glob="*.md") == "readme.md:1:Uses os and sys."
    assert sorted((await found(notes, pattern="os", glob="*.py")).splitlines()) == [
        "src/a.py:1:import os",
        "src/a.py:4:    return os.sep",
        "src/deep/b.py:1:# os is imported elsewhere",
    ]
    assert await found(notes, pattern="os", glob="*.rs") == "no match for 'os'"


async def test_no_hit_is_said_with_the_pattern(notes: Path, search: str) -> None:
    assert await found(notes, pattern="nothing (here)?") == "no match for 'nothing (here)?'"
    assert await found(notes, pattern="os", path="blob.bin") == "no match for 'os'"


async def test_too_many_hits_are_cut_with_a_notice(root: Path, search: str) -> None:
    (root / "one.txt").write_text("hit\n" * (MAX_MATCHES + 50), encoding="utf-8")
    hits = (await found(root, pattern="hit")).splitlines()
    assert hits[:-1] == [f"one.txt:{n}:hit" for n in range(1, MAX_MATCHES + 1)]
    assert hits[-1] == f"… stopped after {MAX_MATCHES} matches"
    (root / "one.txt").write_text("hit\n" * MAX_MATCHES, encoding="utf-8")
    exactly = (await found(root, pattern="hit")).splitlines()
    assert exactly == [f"one.txt:{n}:hit" for n in range(1, MAX_MATCHES + 1)]


async def test_hits_in_many_files_are_cut_with_a_notice(root: Path, search: str) -> None:
    for i in range(3):
        (root / f"f{i}.txt").write_text("hit\n" * 90, encoding="utf-8")
    hits = (await found(root, pattern="hit")).splitlines()
    assert len(hits) == MAX_MATCHES + 1 and hits[-1] == f"… stopped after {MAX_MATCHES} matches"
    assert all(line.endswith(":hit") for line in hits[:-1])


async def test_a_long_line_is_shown_cut(root: Path, search: str) -> None:
    (root / "wide.txt").write_text("start " + "x" * 2000 + " finish\n", encoding="utf-8")
    hit = await found(root, pattern="start")
    assert hit.startswith("wide.txt:1:start " + "x" * (MAX_LINE - len("start ")))
    assert "finish" not in hit and len(hit) < len("wide.txt:1:") + MAX_LINE + 40


async def test_chinese_is_found_in_utf8_and_gb18030_files_once_each(root: Path, search: str) -> None:
    (root / "utf8.txt").write_text("第一行\n第二行\n", encoding="utf-8")
    (root / "gb.txt").write_bytes("标题\n第二章\n".encode("gb18030"))
    assert sorted((await found(root, pattern="第二")).splitlines()) == [
        "gb.txt:2:第二章",
        "utf8.txt:2:第二行",
    ]
    # A line read two ways (as UTF-8 and as GB18030) is still shown once, as its UTF-8 text.
    (root / "gb.txt").unlink()
    (root / "utf8.txt").write_text("第二\n", encoding="utf-8")
    assert await found(root, pattern="第|[^\\x00-\\x7f]") == "utf8.txt:1:第二"


async def test_files_that_are_links_are_not_searched(root: Path, tmp_path: Path, search: str) -> None:
    (tmp_path / "secret.txt").write_text("password=hunter2\n", encoding="utf-8")
    (root / "plain.txt").write_text("password=public\n", encoding="utf-8")
    (root / "leak.txt").symlink_to(tmp_path / "secret.txt")
    os.link(tmp_path / "secret.txt", root / "twin.txt")
    assert await found(root, pattern="password") == "plain.txt:1:password=public"


async def test_a_wrong_pattern_or_path_is_refused_with_the_reason(notes: Path, search: str) -> None:
    with pytest.raises(ToolArgumentError, match="pattern: must not be empty"):
        await found(notes, pattern="")
    with pytest.raises(ToolArgumentError, match="pattern: not a valid regular expression: missing \\)"):
        await found(notes, pattern="(os")
    with pytest.raises(ToolError, match="^src/none: no such file or folder$"):
        await found(notes, pattern="os", path="src/none")
    with pytest.raises(ToolArgumentError, match="path:"):
        await found(notes, pattern="os", path="../")


async def test_a_line_read_two_ways_is_shown_once(root: Path, search: str) -> None:
    """A non-ASCII pattern is searched in the UTF-8 reading and in the GB18030 one; a UTF-8 line
    that also reads as (other) Chinese in GB18030 is one hit, shown as written."""
    (root / "utf8.txt").write_text("第二: x\n", encoding="utf-8")
    assert await found(root, pattern="第|[^\\x00-\\x7f]") == "utf8.txt:1:第二: x"


async def test_text_in_neither_encoding_gives_no_garbled_hit(root: Path, search: str) -> None:
    (root / "broken.txt").write_bytes("第二".encode("gb18030") + b"\xff\n")
    assert await found(root, pattern="第二") == "no match for '第二'"


async def test_an_undecodable_byte_in_a_hit_is_shown_as_a_replacement_character(root: Path) -> None:
    (root / "latin.txt").write_bytes(b"caf\xe9 os\n")
    assert await found(root, pattern="os") == "latin.txt:1:caf\ufffd os"


async def test_hits_of_plain_files_are_all_kept_beside_a_refused_one(
    root: Path, tmp_path: Path, search: str
) -> None:
    """Whatever order the files are searched in, dropping a hard-linked file's lines drops no other."""
    (tmp_path / "secret.txt").write_text("key=hunter2\n", encoding="utf-8")
    os.link(tmp_path / "secret.txt", root / "m-twin.txt")
    for i in range(20):
        (root / f"{chr(ord('a') + i)}.txt").write_text(f"key={i}\n", encoding="utf-8")
    hits = (await found(root, pattern="key=")).splitlines()
    assert sorted(hits) == sorted(f"{chr(ord('a') + i)}.txt:1:key={i}" for i in range(20))


async def test_a_pattern_ripgrep_cannot_run_is_refused_with_its_reason(root: Path) -> None:
    (root / "a.txt").write_text("foobar\n", encoding="utf-8")
    with pytest.raises(
        ToolError,
        match=r"^search_files: look-around, including look-ahead and look-behind, is not supported$",
    ):
        await found(root, pattern="foo(?=bar)")


async def test_the_python_search_runs_what_ripgrep_cannot(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files.shutil, "which", lambda name: None)
    (root / "a.txt").write_text("foobar\nfoobaz\n", encoding="utf-8")
    assert await found(root, pattern="foo(?=bar)") == "a.txt:1:foobar"


async def test_a_search_that_runs_too_long_is_stopped_and_says_how_to_narrow_it(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "a.txt").write_text("a\n", encoding="utf-8")

    def slow(argv: list[str], **kwargs: object) -> object:
        raise subprocess.TimeoutExpired(argv, 30)

    monkeypatch.setattr(files.subprocess, "run", slow)
    with pytest.raises(ToolError) as caught:
        await found(root, pattern="a")
    assert str(caught.value).endswith(
        "search_files: the search took over 30 s; narrow the path or the pattern"
    )
    assert caught.value.retryable is False


async def test_a_missing_workspace_is_said_when_searched(root: Path, search: str) -> None:
    tools = tools_for(root)
    os.rmdir(root)
    with pytest.raises(ToolError, match=r"^\.: no such file or folder$"):
        await tools["search_files"].run({"pattern": "x"})


async def test_the_read_tools_do_not_write_unless_asked(root: Path) -> None:
    assert [t.name for t in file_tools(Workspace([root]))] == ["read_file", "list_dir", "search_files"]
    assert [t.name for t in file_tools(Workspace([root]), write=True)][-1] == "write_file"


async def test_write_file_says_whether_it_wrote_or_replaced_and_hands_the_file_to_the_owner(
    root: Path,
) -> None:
    workspace = Workspace([root])
    owner = 65534 if os.geteuid() == 0 else os.getuid()
    workspace.owner = owner
    write = {t.name: t for t in file_tools(workspace, write=True)}["write_file"]
    assert await write.run({"path": "out/a.txt", "content": "first"}) == "wrote out/a.txt (5 bytes)"
    assert await write.run({"path": "out/a.txt", "content": "第二版"}) == "replaced out/a.txt (9 bytes)"
    for made in (root / "out", root / "out" / "a.txt"):
        assert (made.stat().st_uid, made.stat().st_gid) == (owner, owner), made


@pytest.mark.parametrize(
    ("fake", "said"),
    [
        ("exit 2", "search_files: ripgrep failed"),
        ("echo 'rg: it broke' >&2; echo 'more' >&2; exit 2", "search_files: rg: it broke"),
    ],
)
async def test_a_ripgrep_that_fails_is_reported(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake: str, said: str
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "rg").write_text(f"#!/bin/sh\n{fake}\n", encoding="utf-8")
    (bin_dir / "rg").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    (root / "a.txt").write_text("a\n", encoding="utf-8")
    with pytest.raises(ToolError) as caught:
        await found(root, pattern="a")
    assert str(caught.value).endswith(said)
