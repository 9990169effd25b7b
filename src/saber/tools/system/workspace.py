"""Where the system tools may look: configured root folders, and the one rule that keeps every
path inside them (no ``..``, no absolute path outside a root, no symlink that leads out)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from saber.tools.errors import ToolArgumentError


@dataclass(frozen=True, kw_only=True)
class Located:
    """A path inside a root: the real file and how results name it (relative to its root)."""

    path: Path
    root: Path
    shown: str


class Workspace:
    """The roots a tool may touch. The first root is where relative paths start."""

    def __init__(self, roots: list[Path]) -> None:
        if not roots:
            raise ValueError("the workspace needs at least one root folder")
        self.roots = [Path(os.path.realpath(r.expanduser())) for r in roots]
        self.owner: int | None = None
        """Set when the sandbox runs as another user: files the tools write are handed to it."""

    def ensure(self) -> None:
        for root in self.roots:
            root.mkdir(parents=True, exist_ok=True)

    def locate(self, raw: str, *, field: str = "path", tool: str | None = None) -> Located:
        """Resolve ``raw`` (relative to the first root, or absolute inside a root) to a real path
        inside a root, following symlinks; anything that would leave the roots is refused."""
        text = (raw or ".").strip() or "."
        if "\x00" in text:
            raise ToolArgumentError(f"{field}: contains a NUL character", tool=tool)
        given = Path(text).expanduser()
        if ".." in given.parts:
            raise ToolArgumentError(f"{field}: '..' is not allowed (paths stay inside the workspace): {raw!r}", tool=tool)
        if given.is_absolute():
            # As written, else as resolved: a root configured through a symlink (``~/work`` → a
            # disk) is named by the model the way the settings name it.
            joined = Path(os.path.abspath(given))
            candidates = [r for r in self.roots if _inside(joined, r)] or [
                r for r in self.roots if _inside(Path(os.path.realpath(joined)), r)]
            if not candidates:
                raise ToolArgumentError(f"{field}: {raw!r} is outside the workspace ({self.describe()})", tool=tool)
            root = candidates[0]
        else:
            root, joined = self.roots[0], self.roots[0] / given
        real = Path(os.path.realpath(joined))
        if not _inside(real, root):
            raise ToolArgumentError(f"{field}: {raw!r} leads outside the workspace through a symlink", tool=tool)
        shown = real.relative_to(root).as_posix() or "."
        return Located(path=real, root=root, shown=shown)

    def describe(self) -> str:
        return ", ".join(str(r) for r in self.roots)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
