"""Where Saber keeps what it can rebuild: ``$XDG_CACHE_HOME/saber`` or ``~/.cache/saber``."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "saber"
