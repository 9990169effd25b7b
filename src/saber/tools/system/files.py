"""``read_file``, ``list_dir``, ``search_files`` and ``write_file``: the workspace as tools.

Every path goes through ``Workspace.locate`` (no ``..``, nothing outside a root, no symlink that
leads out), then is opened from the root's folder descriptor without following any symlink, and a
file with another hard link is refused (``safe_open``); results name paths relative to their root.
File I/O runs in worker threads."""

from __future__ import annotations

import asyncio
import fnmatch
import os
import re
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from saber.tools.base import Tool, tool
from saber.tools.errors import ToolArgumentError, ToolError
from saber.tools.system.safe_open import open_folder, open_regular, replace_file, single_link_file
from saber.tools.system.textfile import SNIFF_BYTES, decode, looks_binary
from saber.tools.system.workspace import Located, Workspace

MAX_LIST = 500
MAX_MATCHES = 200
MAX_LINE = 400


@dataclass(frozen=True, kw_only=True)
class FileLimits:
    max_read_bytes: int = 1_000_000
    """The largest file read whole; bigger ones are read in parts (offset, limit)."""
    max_write_bytes: int = 1_000_000
    max_lines: int = 2000
    """Lines one read_file call returns at most."""


def file_tools(workspace: Workspace, limits: FileLimits | None = None, *, write: bool = False) -> list[Tool]:
    """The read tools always; ``write_file`` only when ``write`` (it asks for approval)."""
    limits = limits or FileLimits()

    @tool
    async def read_file(path: str, offset: int = 1, limit: int | None = None) -> str:
        """Read a text file from the workspace, with line numbers.

        Args:
            path: File path relative to the workspace.
            offset: First line to read (1 = the start).
            limit: How many lines to read (default: up to 2000).
        """
        if offset < 1:
            raise ToolArgumentError("offset: must be 1 or more", tool="read_file")
        if limit is not None and limit < 1:
            raise ToolArgumentError("limit: must be 1 or more", tool="read_file")
        where = workspace.locate(path, tool="read_file")
        return await asyncio.to_thread(_read, where, offset, min(limit or limits.max_lines, limits.max_lines), limits)

    @tool
    async def list_dir(path: str = ".") -> str:
        """List a folder of the workspace: sub-folders first, then files with their sizes.

        Args:
            path: Folder path relative to the workspace ("." is the workspace itself).
        """
        where = workspace.locate(path, tool="list_dir")
        return await asyncio.to_thread(_list, where)

    @tool
    async def search_files(pattern: str, path: str = ".", glob: str | None = None) -> str:
        """Search file contents in the workspace with a regular expression (ripgrep-style output:
        path:line:text).

        Args:
            pattern: Regular expression to look for.
            path: Folder (or file) to search, relative to the workspace.
            glob: Only files whose name matches this glob, e.g. "*.py".
        """
        if not pattern:
            raise ToolArgumentError("pattern: must not be empty", tool="search_files")
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise ToolArgumentError(f"pattern: not a valid regular expression: {exc}", tool="search_files") from None
        where = workspace.locate(path, tool="search_files")
        return await asyncio.to_thread(_search, pattern, compiled, where.path, where.root, glob)

    tools = [read_file, list_dir, search_files]
    if write:
        @tool(requires_approval=True, idempotent=False)
        async def write_file(path: str, content: str) -> str:
            """Write a text file in the workspace (UTF-8), creating folders as needed; replaces an
            existing file.

            Args:
                path: File path relative to the workspace.
                content: The whole text of the file.
            """
            data = content.encode("utf-8")
            if len(data) > limits.max_write_bytes:
                raise ToolArgumentError(f"content: {len(data):,} bytes, over the {limits.max_write_bytes:,}-byte limit",
                                        tool="write_file")
            where = workspace.locate(path, tool="write_file")
            return await asyncio.to_thread(_write, where, data, workspace.owner)

        tools.append(write_file)
    return tools


def _read(where: Located, offset: int, limit: int, limits: FileLimits) -> str:
    shown = where.shown
    with open_regular(where.root, where.path, shown) as f:
        head = f.read(SNIFF_BYTES)
        size = os.fstat(f.fileno()).st_size
        if looks_binary(head):
            raise ToolError(f"{shown}: binary file ({size:,} bytes), not shown")
        if size <= limits.max_read_bytes:
            try:
                text, _ = decode(head + f.read(limits.max_read_bytes + 1 - len(head)))
            except ValueError as exc:
                raise ToolError(f"{shown}: {exc}") from None
            lines = text.splitlines()
        else:
            f.seek(0)
            lines = _lines_of_large(f, shown, offset - 1 + limit)
    total = len(lines) if size <= limits.max_read_bytes else None
    chosen = lines[offset - 1: offset - 1 + limit]
    if not chosen:
        return f"{shown}: no line {offset} (the file has {len(lines)} lines)"
    last = offset + len(chosen) - 1
    of = f" of {total}" if total is not None else ""
    header = f"{shown} (lines {offset}-{last}{of})"
    more = "" if total is not None and last >= total else "\n… more lines: read on with offset"
    return header + "\n" + "\n".join(f"{offset + i:>6}\t{line}" for i, line in enumerate(chosen)) + more


def _lines_of_large(f: BinaryIO, shown: str, upto: int) -> list[str]:
    """The first ``upto`` lines of a file too large to read whole, decoded line by line."""
    out: list[str] = []
    for raw in f:
        try:
            out.append(decode(raw.rstrip(b"\r\n"))[0])
        except ValueError:
            raise ToolError(f"{shown}: line {len(out) + 1} is not UTF-8 or GB18030 text") from None
        if len(out) >= upto:
            break
    return out


def _list(where: Located) -> str:
    shown = where.shown
    folders, files = [], []
    with open_folder(where.root, where.path, shown) as fd, os.scandir(fd) as listing:
        for entry in sorted(listing, key=lambda e: e.name):
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                folders.append(f"{entry.name}/")
            elif stat.S_ISLNK(info.st_mode):
                files.append(f"{entry.name} -> (link)")
            else:
                files.append(f"{entry.name}  {info.st_size:,} B")
    entries = folders + files
    head = f"{shown}/ ({len(folders)} folders, {len(files)} files)"
    if not entries:
        return head + "\n(empty)"
    cut = f"\n… {len(entries) - MAX_LIST} more not shown" if len(entries) > MAX_LIST else ""
    return head + "\n" + "\n".join(entries[:MAX_LIST]) + cut


def _search(pattern: str, compiled: re.Pattern[str], path: Path, root: Path, glob: str | None) -> str:
    if not path.exists():
        raise ToolError(f"{path.relative_to(root).as_posix() or '.'}: no such file or folder")
    rg = shutil.which("rg")
    lines = _search_rg(rg, pattern, path, root, glob) if rg else _search_python(compiled, path, root, glob)
    if not lines:
        return f"no match for {pattern!r}"
    cut = f"\n… stopped after {MAX_MATCHES} matches" if len(lines) > MAX_MATCHES else ""
    return "\n".join(lines[:MAX_MATCHES]) + cut


def _search_rg(rg: str, pattern: str, path: Path, root: Path, glob: str | None) -> list[str]:
    """ripgrep: linear-time regexes (no catastrophic backtracking), skips binary files, no symlinks.
    It runs in the folder opened without following symlinks (``safe_open``), and lines of a file
    with another hard link are dropped. One match more than shown is asked of each file, so that a
    single file with too many still gets the notice that the hits were cut."""
    folder, target = (path, ".") if path.is_dir() else (path.parent, path.name)
    argv = [rg, "--line-number", "--with-filename", "--no-heading", "--null", "--color=never", "--max-columns", str(MAX_LINE),
            "--max-columns-preview", "--max-count", str(MAX_MATCHES + 1), "--encoding", "auto", "-e", pattern]
    if glob:
        argv += ["--glob", glob]
    argv += ["--", target]
    with open_folder(root, folder, folder.relative_to(root).as_posix() or ".") as fd:
        place = _Place(fd=fd, shown=folder.relative_to(root))
        out = _rg_lines(argv, place)
        if not pattern.isascii():
            # ASCII patterns match GB18030 files byte for byte; others need the files decoded as GB18030.
            seen = {line.split(":", 2)[0] + ":" + line.split(":", 2)[1] for line in out if line.count(":") >= 2}
            gb = [a if a != "auto" else "gb18030" for a in argv]
            out += [line for line in _rg_lines(gb, place)
                    if ":".join(line.split(":", 2)[:2]) not in seen and "\ufffd" not in line]
    return out


@dataclass(frozen=True, kw_only=True)
class _Place:
    fd: int
    """The folder searched, opened."""
    shown: Path
    """Its path relative to the root."""


def _rg_lines(argv: list[str], place: _Place) -> list[str]:
    try:
        done = subprocess.run(argv, capture_output=True, timeout=30, cwd=f"/proc/self/fd/{place.fd}",
                              pass_fds=(place.fd,), check=False)
    except subprocess.TimeoutExpired:
        raise ToolError("search_files: the search took over 30 s; narrow the path or the pattern", retryable=False) from None
    if done.returncode not in (0, 1):
        # ripgrep's own "error: ..." line names the problem (a look-around it cannot run); its
        # first line ("regex parse error:") does not.
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        why = [line.removeprefix("error: ") for line in said if line.startswith("error: ")] or said[:1]
        raise ToolError(f"search_files: {why[0] if why else 'ripgrep failed'}")
    out = []
    checked: dict[bytes, bool] = {}
    for raw in done.stdout.splitlines():
        name, _, rest = raw.partition(b"\0")
        if name not in checked:
            checked[name] = single_link_file(name, dir_fd=place.fd)
        if not checked[name]:
            continue
        shown = (place.shown / os.path.normpath(os.fsdecode(name))).as_posix()
        out.append(f"{shown}:{rest.decode('utf-8', 'replace')}")
        if len(out) > MAX_MATCHES:
            break
    return out


def _search_python(compiled: re.Pattern[str], path: Path, root: Path, glob: str | None) -> list[str]:
    out: list[str] = []
    files = [path] if path.is_file() else (Path(d) / f for d, _, names in os.walk(path) for f in sorted(names))
    for file in files:
        if glob and not fnmatch.fnmatch(file.name, glob):
            continue
        try:
            with open_regular(root, file, file.name) as f:
                data = f.read()
            if looks_binary(data):
                continue
            text, _ = decode(data)
        except (OSError, ValueError, ToolError):  # symlinks, hard links, FIFOs and the unreadable are skipped
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if compiled.search(line):
                out.append(f"{file.relative_to(root).as_posix()}:{number}:{line[:MAX_LINE]}")
                if len(out) > MAX_MATCHES:
                    return out
    return out


def _write(where: Located, data: bytes, owner: int | None) -> str:
    existed = replace_file(where.root, where.path, where.shown, data, owner=owner)
    return f"{'replaced' if existed else 'wrote'} {where.shown} ({len(data):,} bytes)"
