"""Opening workspace files so that no symlink and no hard link leads outside the workspace.

``Workspace.locate`` resolves a path once; between that check and the use, a folder on the way
could be swapped for a symlink. So the file tools never open a path string: they walk from the
root's folder descriptor one component at a time with ``O_NOFOLLOW`` (a symlink met on the way is
an error), and create with ``O_CREAT | O_EXCL | O_NOFOLLOW`` under a fresh name, replaced into
place relative to the folder's descriptor. A regular file with more than one hard link is refused
too: one of its names may be outside the workspace (``ln /etc/shadow workspace/x``), and reading
or writing it through the workspace name would reach that file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from saber.tools.errors import ToolError

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_LINKED = "has {n} hard links (another may be outside the workspace): refused"


def _moved(shown: str) -> ToolError:
    return ToolError(f"{shown}: a folder on the way is a symlink or changed while it was opened: refused")


@contextlib.contextmanager
def open_folder(root: Path, real: Path, shown: str, *, create: bool = False, owner: int | None = None) -> Iterator[int]:
    """A descriptor of the folder ``real`` (a resolved path inside ``root``), reached from the root
    without following any symlink. With ``create``, missing folders are made (and handed to
    ``owner``); else a missing one is "no such folder"."""
    fd = os.open(root, _DIR)
    try:
        parts = real.relative_to(root).parts
        for index, part in enumerate(parts):
            try:
                child = os.open(part, _DIR, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise ToolError(f"{shown}: no such folder") from None
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
                try:
                    child = os.open(part, _DIR, dir_fd=fd)
                except OSError:
                    raise _moved(shown) from None
                if owner is not None:
                    os.fchown(child, owner, owner)
            except OSError as exc:
                if exc.errno in (errno.ENOTDIR, errno.ELOOP):
                    kind = _kind(part, fd)
                    if kind == "file" and index == len(parts) - 1 and not create:
                        raise ToolError(f"{shown}: is a file (use read_file)") from None
                    if kind == "file":
                        raise ToolError(f"{shown}: a part of the path is a file, not a folder") from None
                    raise _moved(shown) from None
                raise
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _kind(name: str, dir_fd: int) -> str:
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except OSError:
        return "missing"
    return "file" if stat.S_ISREG(mode) else "link" if stat.S_ISLNK(mode) else "other"


@contextlib.contextmanager
def open_regular(root: Path, real: Path, shown: str) -> Iterator[BinaryIO]:
    """The regular file ``real`` for reading: not a symlink, a folder, a device or a FIFO (opened
    without blocking, then checked), and with no other hard link."""
    if real == root:
        raise ToolError(f"{shown}: is a folder (use list_dir)")
    with open_folder(root, real.parent, shown) as folder:
        try:
            fd = os.open(real.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
        except FileNotFoundError:
            raise ToolError(f"{shown}: no such file") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _moved(shown) from None
            raise ToolError(f"{shown}: cannot be opened: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(f"{shown}: is a folder (use list_dir)")
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"{shown}: not a regular file")
        if info.st_nlink > 1:
            raise ToolError(f"{shown}: " + _LINKED.format(n=info.st_nlink))
        os.set_blocking(fd, True)
        f = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with f:
        yield f


def single_link_file(path: Path | bytes, *, dir_fd: int | None = None) -> bool:
    """A regular file (not a symlink) with one link: what a search may show lines of."""
    try:
        info = os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_nlink == 1


def replace_file(root: Path, real: Path, shown: str, data: bytes, *, owner: int | None = None) -> bool:
    """Write ``data`` as the file ``real`` (creating folders as needed): into a new file made with
    ``O_CREAT | O_EXCL | O_NOFOLLOW`` under a random name, then renamed over ``real``, both
    relative to the folder's descriptor. True when a file was replaced."""
    if real == root:
        raise ToolError(f"{shown}: is a folder")
    with open_folder(root, real.parent, shown, create=True, owner=owner) as folder:
        existed = _check_target(real.name, folder, shown)
        tmp = f".{real.name[:64]}.{secrets.token_hex(8)}.saber-tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=folder)
        try:
            with os.fdopen(fd, "wb", closefd=False) as f:
                f.write(data)
                f.flush()
                if owner is not None:
                    os.fchown(fd, owner, owner)
                os.fsync(fd)
            os.close(fd)
            fd = -1
            os.replace(tmp, real.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            if fd >= 0:
                os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=folder)
            raise
    return existed


def _check_target(name: str, folder: int, shown: str) -> bool:
    try:
        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(info.st_mode):
        raise ToolError(f"{shown}: is a folder")
    if stat.S_ISLNK(info.st_mode):
        raise _moved(shown)
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(f"{shown}: not a regular file")
    if info.st_nlink > 1:
        raise ToolError(f"{shown}: " + _LINKED.format(n=info.st_nlink))
    return True
