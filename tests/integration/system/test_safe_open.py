"""The last line of defence of the file tools: ``Workspace.locate`` has checked a path, and then the
tree changed (a folder swapped for a symlink, a hard link planted, a FIFO put in place). These call
the opening functions on such a tree directly, as they meet it after the check."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from saber.tools import ToolError
from saber.tools.system import safe_open
from saber.tools.system.safe_open import open_folder, open_regular, replace_file, single_link_file

MOVED = "a folder on the way is a symlink or changed while it was opened: refused"


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[Path]:
    """``root`` with a file and a folder in it, and a secret file next to it (outside)."""
    root = tmp_path / "root"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.txt").write_text("alpha\n", encoding="utf-8")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("top secret\n", encoding="utf-8")
    old = os.umask(0o022)
    try:
        yield root
    finally:
        os.umask(old)


def enter_folder(root: Path, real: Path, shown: str) -> None:
    with open_folder(root, real, shown):
        pass


def enter_file(root: Path, real: Path, shown: str) -> None:
    with open_regular(root, real, shown):
        pass


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".saber-tmp")]


def test_a_folder_on_the_way_that_became_a_symlink_is_refused(tree: Path) -> None:
    (tree / "link").symlink_to(tree.parent / "outside")
    with pytest.raises(ToolError, match=f"^link/secret.txt: {MOVED}$"):
        enter_file(tree, tree / "link" / "secret.txt", "link/secret.txt")
    with pytest.raises(ToolError, match=f"^link/new.txt: {MOVED}$"):
        replace_file(tree, tree / "link" / "new.txt", "link/new.txt", b"planted")
    assert not (tree.parent / "outside" / "new.txt").exists()


def test_a_file_where_a_folder_should_be_is_named_as_such(tree: Path) -> None:
    with pytest.raises(ToolError, match=r"^docs/a.txt: is a file \(use read_file\)$"):
        enter_folder(tree, tree / "docs" / "a.txt", "docs/a.txt")
    with pytest.raises(ToolError, match="^docs/a.txt/x: a part of the path is a file, not a folder$"):
        enter_folder(tree, tree / "docs" / "a.txt" / "x", "docs/a.txt/x")
    with pytest.raises(ToolError, match="^docs/a.txt/x.txt: a part of the path is a file, not a folder$"):
        replace_file(tree, tree / "docs" / "a.txt" / "x.txt", "docs/a.txt/x.txt", b"x")
    with pytest.raises(ToolError, match="^nowhere: no such folder$"):
        enter_folder(tree, tree / "nowhere", "nowhere")


def test_a_symlink_as_the_last_folder_is_refused_not_taken_for_a_file(tree: Path) -> None:
    (tree / "door").symlink_to(tree.parent / "outside")
    with pytest.raises(ToolError, match=f"^door: {MOVED}$"):
        enter_folder(tree, tree / "door", "door")


def test_a_file_is_read_only_when_it_is_a_plain_file_of_one_link(tree: Path) -> None:
    with open_regular(tree, tree / "docs" / "a.txt", "docs/a.txt") as f:
        assert f.read() == b"alpha\n"
    (tree / "docs" / "leak.txt").symlink_to(tree.parent / "outside" / "secret.txt")
    with pytest.raises(ToolError, match=f"^docs/leak.txt: {MOVED}$"):
        enter_file(tree, tree / "docs" / "leak.txt", "docs/leak.txt")
    with pytest.raises(ToolError, match=r"^\.: is a folder \(use list_dir\)$"):
        enter_file(tree, tree, ".")
    with pytest.raises(ToolError, match=r"^docs: is a folder \(use list_dir\)$"):
        enter_file(tree, tree / "docs", "docs")
    with pytest.raises(ToolError, match="^docs/none.txt: no such file$"):
        enter_file(tree, tree / "docs" / "none.txt", "docs/none.txt")


def test_writing_over_a_symlink_a_folder_a_fifo_or_a_linked_file_is_refused(tree: Path) -> None:
    secret = tree.parent / "outside" / "secret.txt"
    (tree / "docs" / "leak.txt").symlink_to(secret)
    with pytest.raises(ToolError, match=f"^docs/leak.txt: {MOVED}$"):
        replace_file(tree, tree / "docs" / "leak.txt", "docs/leak.txt", b"overwritten")
    with pytest.raises(ToolError, match="^docs: is a folder$"):
        replace_file(tree, tree / "docs", "docs", b"x")
    with pytest.raises(ToolError, match="^.: is a folder$"):
        replace_file(tree, tree, ".", b"x")
    os.mkfifo(tree / "docs" / "pipe")
    with pytest.raises(ToolError, match="^docs/pipe: not a regular file$"):
        replace_file(tree, tree / "docs" / "pipe", "docs/pipe", b"x")
    os.link(secret, tree / "docs" / "twin.txt")
    with pytest.raises(ToolError, match=r"^docs/twin.txt: has 2 hard links \(another may be outside the workspace\): refused$"):
        replace_file(tree, tree / "docs" / "twin.txt", "docs/twin.txt", b"overwritten")
    assert secret.read_text(encoding="utf-8") == "top secret\n"
    assert leftovers(tree / "docs") == []


def test_a_written_file_is_new_then_replaced_readable_by_all_and_leaves_nothing_behind(tree: Path) -> None:
    target = tree / "new" / "deep" / "n.txt"
    assert replace_file(tree, target, "new/deep/n.txt", "第一版\n".encode()) is False
    assert replace_file(tree, target, "new/deep/n.txt", b"second\n") is True
    assert target.read_bytes() == b"second\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644 and stat.S_IMODE((tree / "new").stat().st_mode) == 0o755
    assert leftovers(tree / "new" / "deep") == []
    long_name = "n" * 200 + ".txt"
    assert replace_file(tree, tree / long_name, long_name, b"x") is False and (tree / long_name).read_bytes() == b"x"


def test_a_written_file_and_its_new_folders_belong_to_the_owner(tree: Path) -> None:
    owner = 65534 if os.geteuid() == 0 else os.getuid()  # as root (CI): the sandbox's nobody
    replace_file(tree, tree / "made" / "by" / "x.txt", "made/by/x.txt", b"x", owner=owner)
    for path in (tree / "made", tree / "made" / "by", tree / "made" / "by" / "x.txt"):
        info = path.stat()
        assert (info.st_uid, info.st_gid) == (owner, owner), path


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tree / "docs" / "a.txt"
    with pytest.raises(TypeError):
        replace_file(tree, target, "docs/a.txt", "text, not bytes")  # type: ignore[arg-type]
    assert target.read_bytes() == b"alpha\n" and leftovers(tree / "docs") == []

    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(safe_open.os, "replace", full_disk)
    with pytest.raises(OSError, match="No space left"):
        replace_file(tree, target, "docs/a.txt", b"new")
    assert target.read_bytes() == b"alpha\n" and leftovers(tree / "docs") == []


def test_only_a_plain_file_of_one_link_may_show_its_lines_in_a_search(tree: Path) -> None:
    docs = tree / "docs"
    (docs / "leak.txt").symlink_to(tree.parent / "outside" / "secret.txt")
    os.link(tree.parent / "outside" / "secret.txt", docs / "twin.txt")
    assert single_link_file(docs / "a.txt")
    assert not single_link_file(docs / "leak.txt"), "a symlink, though to a plain file of one link"
    assert not single_link_file(docs / "twin.txt") and not single_link_file(docs / "none.txt")
    assert not single_link_file(docs)
    fd = os.open(docs, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert single_link_file(b"a.txt", dir_fd=fd) and not single_link_file(b"leak.txt", dir_fd=fd)
    finally:
        os.close(fd)


def test_a_symlink_to_a_file_on_the_way_is_refused_as_a_symlink_not_named_a_file(tree: Path) -> None:
    (tree / "docs" / "to-file").symlink_to("a.txt")
    with pytest.raises(ToolError, match=f"^docs/to-file: {MOVED}$"):
        enter_folder(tree, tree / "docs" / "to-file", "docs/to-file")
    with pytest.raises(ToolError, match=f"^docs/to-file/x: {MOVED}$"):
        enter_folder(tree, tree / "docs" / "to-file" / "x", "docs/to-file/x")


def test_a_symlink_to_a_plain_file_of_one_link_may_not_show_its_lines(tree: Path) -> None:
    (tree / "docs" / "alias.txt").symlink_to("a.txt")
    assert single_link_file(tree / "docs" / "a.txt")
    assert not single_link_file(tree / "docs" / "alias.txt")


def test_a_failed_write_closes_its_own_descriptor_and_no_other(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    before = sorted(os.listdir("/proc/self/fd"))
    monkeypatch.setattr(safe_open.os, "replace", full_disk)
    for _ in range(3):
        with pytest.raises(OSError, match="No space left"):
            replace_file(tree, tree / "docs" / "a.txt", "docs/a.txt", b"new")
    assert sorted(os.listdir("/proc/self/fd")) == before
