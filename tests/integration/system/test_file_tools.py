"""The workspace file tools: confined to their roots, honest about binary and large files,
Chinese text read right, results named relative to the root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from saber.config import Settings
from saber.tools import ToolArgumentError, ToolError
from saber.tools.base import Tool
from saber.tools.system import system_tools
from saber.tools.system.files import FileLimits, file_tools
from saber.tools.system.workspace import Located, Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "a.txt").write_text("alpha\nbeta\ngamma\n", encoding="utf-8")
    (root / "zh.txt").write_bytes("你好，世界\n第二行\n".encode("gb18030"))
    (root / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)
    (tmp_path / "secret.txt").write_text("top secret", encoding="utf-8")
    return root


def tools_for(root: Path, **kwargs: object) -> dict[str, Tool]:
    return {t.name: t for t in file_tools(Workspace([root]), FileLimits(**kwargs), write=True)}  # type: ignore[arg-type]


async def test_read_file_numbers_lines_and_names_the_path_relative_to_the_root(ws: Path) -> None:
    out = await tools_for(ws)["read_file"].run({"path": "notes/a.txt", "offset": 2, "limit": 1})
    assert out.splitlines()[0] == "notes/a.txt (lines 2-2 of 3)"
    assert out.splitlines()[1].endswith("\tbeta")
    assert str(ws) not in out


async def test_gb18030_chinese_text_is_decoded(ws: Path) -> None:
    out = await tools_for(ws)["read_file"].run({"path": "zh.txt"})
    assert "你好，世界" in out and "第二行" in out


async def test_binary_files_are_refused_not_dumped(ws: Path) -> None:
    with pytest.raises(ToolError, match="binary file"):
        await tools_for(ws)["read_file"].run({"path": "blob.bin"})


@pytest.mark.parametrize("path", ["../secret.txt", "notes/../../secret.txt", "/etc/passwd", "../../etc/passwd"])
async def test_paths_outside_the_workspace_are_refused(ws: Path, path: str) -> None:
    with pytest.raises(ToolArgumentError, match="path:"):
        await tools_for(ws)["read_file"].run({"path": path})


async def test_an_absolute_path_inside_the_workspace_is_fine(ws: Path) -> None:
    out = await tools_for(ws)["read_file"].run({"path": str(ws / "notes" / "a.txt")})
    assert out.startswith("notes/a.txt")


async def test_a_symlink_that_leads_out_is_refused(ws: Path) -> None:
    (ws / "escape").symlink_to(ws.parent / "secret.txt")
    (ws / "door").symlink_to(ws.parent)
    tools = tools_for(ws)
    with pytest.raises(ToolArgumentError, match="symlink"):
        await tools["read_file"].run({"path": "escape"})
    with pytest.raises(ToolArgumentError, match="symlink"):
        await tools["list_dir"].run({"path": "door"})
    with pytest.raises(ToolArgumentError, match="symlink"):
        await tools["write_file"].run({"path": "door/planted.txt", "content": "x"})
    assert not (ws.parent / "planted.txt").exists()


async def test_large_files_are_read_in_parts(ws: Path) -> None:
    big = ws / "big.log"
    big.write_text("".join(f"line {i}\n" for i in range(1, 50_001)), encoding="utf-8")
    tools = tools_for(ws, max_read_bytes=10_000, max_lines=100)
    out = await tools["read_file"].run({"path": "big.log", "offset": 1000, "limit": 3})
    assert out.splitlines()[1:4] == ["  1000\tline 1000", "  1001\tline 1001", "  1002\tline 1002"]
    assert "more lines" in out
    whole = await tools["read_file"].run({"path": "big.log"})
    assert len(whole.splitlines()) == 1 + 100 + 1


@pytest.mark.parametrize("ripgrep", [True, False], ids=["ripgrep", "python"])
async def test_list_dir_and_search_files(ws: Path, ripgrep: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not ripgrep:
        monkeypatch.setattr("saber.tools.system.files.shutil.which", lambda name: None)
    tools = tools_for(ws)
    listing = await tools["list_dir"].run({"path": "."})
    assert "notes/" in listing and "zh.txt" in listing
    found = await tools["search_files"].run({"pattern": "gam+a", "glob": "*.txt"})
    assert found.strip() == "notes/a.txt:3:gamma"
    chinese = await tools["search_files"].run({"pattern": "第二"})
    assert "zh.txt:2:第二行" in chinese
    assert (await tools["search_files"].run({"pattern": "beta", "path": "notes"})).strip() == "notes/a.txt:2:beta"
    assert (await tools["search_files"].run({"pattern": "beta", "path": "notes/a.txt"})).strip() == "notes/a.txt:2:beta"
    assert (await tools["search_files"].run({"pattern": "nothing-here"})).startswith("no match")
    with pytest.raises(ToolArgumentError, match="pattern"):
        await tools["search_files"].run({"pattern": "(unclosed"})


async def test_write_file_writes_inside_and_asks_for_approval(ws: Path) -> None:
    tools = tools_for(ws)
    assert tools["write_file"].approval_reason({"path": "x", "content": "y"})
    assert tools["read_file"].approval_reason({"path": "x"}) is None
    out = await tools["write_file"].run({"path": "new/dir/file.md", "content": "# 标题\n"})
    assert out == "wrote new/dir/file.md (9 bytes)"
    assert (ws / "new" / "dir" / "file.md").read_text(encoding="utf-8") == "# 标题\n"


async def test_settings_decide_what_is_registered(tmp_path: Path) -> None:
    default = system_tools(Settings(home=tmp_path))
    assert [t.name for t in default.tools] == ["read_file", "list_dir", "search_files"]
    assert any("exec_command is off" in n for n in default.notes)
    assert (tmp_path / "workspace").is_dir()
    writing = system_tools(Settings(home=tmp_path, files={"write": True}))
    assert "write_file" in [t.name for t in writing.tools]
    off = system_tools(Settings(home=tmp_path, files={"enabled": False}))
    assert off.tools == []


async def test_exec_is_not_registered_when_bubblewrap_cannot_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    got = system_tools(Settings(home=tmp_path, exec={"enabled": True}))
    assert "exec_command" not in [t.name for t in got.tools]
    assert any("bubblewrap" in n and "never runs unconfined" in n for n in got.notes)
    unconfined = system_tools(Settings(home=tmp_path, exec={"enabled": True, "sandbox": "none"}))
    assert "exec_command" in [t.name for t in unconfined.tools]
    assert any("WITHOUT a sandbox" in n for n in unconfined.notes)
    assert os.environ["PATH"] == str(tmp_path / "empty")


def test_saber_config_says_why_exec_is_not_available(tmp_path: Path) -> None:
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("SABER_")}
    env.update(SABER_HOME=str(tmp_path / "home"), SABER_EXEC_ENABLED="true", PATH=str(tmp_path / "empty"))
    done = subprocess.run([sys.executable, "-m", "saber.cli", "config"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "note: exec_command is not available: bubblewrap (bwrap) is not installed" in done.stdout


async def test_a_planted_symlink_at_the_temp_name_does_not_make_write_file_write_outside(ws: Path) -> None:
    """The old temp file was the fixed ``.{name}.saber-tmp``, written through any symlink there."""
    outside = ws.parent / "outside.txt"
    outside.write_text("untouched", encoding="utf-8")
    (ws / ".report.txt.saber-tmp").symlink_to(outside)
    out = await tools_for(ws)["write_file"].run({"path": "report.txt", "content": "the report"})
    assert out == "wrote report.txt (10 bytes)"
    assert outside.read_text(encoding="utf-8") == "untouched"
    assert not (ws / "report.txt").is_symlink() and (ws / "report.txt").read_text(encoding="utf-8") == "the report"
    assert sorted(name for name in os.listdir(ws) if "saber-tmp" in name) == [".report.txt.saber-tmp"]


class SwappingWorkspace(Workspace):
    """A workspace whose folder ``d`` becomes a symlink to outside right after each check: the
    race between ``locate`` and the open."""

    def __init__(self, root: Path, outside: Path) -> None:
        super().__init__([root])
        self.outside = outside

    def locate(self, raw: str, *, field: str = "path", tool: str | None = None) -> Located:
        where = super().locate(raw, field=field, tool=tool)
        folder = self.roots[0] / "d"
        if folder.is_dir() and not folder.is_symlink():
            for child in folder.iterdir():
                child.unlink()
            folder.rmdir()
            folder.symlink_to(self.outside)
        return where


async def test_a_folder_swapped_for_a_symlink_after_the_check_is_refused(ws: Path) -> None:
    outside = ws.parent / "elsewhere"
    outside.mkdir()
    (outside / "f.txt").write_text("outside secret", encoding="utf-8")
    for action, args, shown in [("write_file", {"path": "d/f.txt", "content": "planted"}, "d/f.txt"),
                                ("read_file", {"path": "d/f.txt"}, "d/f.txt"), ("list_dir", {"path": "d"}, "d"),
                                ("search_files", {"pattern": "secret", "path": "d"}, "d")]:
        (ws / "d").mkdir()
        (ws / "d" / "f.txt").write_text("inside", encoding="utf-8")
        tools = {t.name: t for t in file_tools(SwappingWorkspace(ws, outside), write=True)}
        with pytest.raises(ToolError, match=f"{shown}: a folder on the way is a symlink or changed while it was opened: refused$"):
            await tools[action].run(args)
        (ws / "d").unlink()
    assert (outside / "f.txt").read_text(encoding="utf-8") == "outside secret"


@pytest.mark.parametrize("ripgrep", [True, False], ids=["ripgrep", "python"])
async def test_a_hard_link_to_a_file_outside_is_neither_read_searched_nor_written(
        ws: Path, ripgrep: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not ripgrep:
        monkeypatch.setattr("saber.tools.system.files.shutil.which", lambda name: None)
    secret = ws.parent / "secret.txt"
    os.link(secret, ws / "innocent.txt")
    tools = tools_for(ws)
    with pytest.raises(ToolError, match="innocent.txt: has 2 hard links"):
        await tools["read_file"].run({"path": "innocent.txt"})
    assert (await tools["search_files"].run({"pattern": "secret"})).startswith("no match")
    with pytest.raises(ToolError, match="innocent.txt: has 2 hard links"):
        await tools["write_file"].run({"path": "innocent.txt", "content": "overwritten"})
    assert secret.read_text(encoding="utf-8") == "top secret"


async def test_a_fifo_is_refused_without_hanging(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    with pytest.raises(ToolError, match="pipe: not a regular file"):
        await tools_for(ws)["read_file"].run({"path": "pipe"})
